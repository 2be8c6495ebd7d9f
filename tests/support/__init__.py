"""Development-only helpers shared by the tests and scripts/ (not installed with the
package): the structure-aware fuzzer (`fuzzing`), the broker as a subprocess
(`process`), raw request/response exchange (`wire`) and client logging (`clients`).

scripts/*.py put the repository root on `sys.path` to import them as `tests.support.*`.
"""
