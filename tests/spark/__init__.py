"""The PySpark jobs and report over the metrics files."""
