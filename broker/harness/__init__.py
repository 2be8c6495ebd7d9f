"""What test harnesses use, plugged into the request pipeline as interceptors and
observers: fault injection, request recording, the conformance report, the metrics
sink, the HTTP control plane and the pytest plugin. Nothing in the pipeline imports it.

Kept free of imports so that the pytest plugin (a submodule, loaded in every pytest run
of a project that installs this package) stays cheap to load.
"""
