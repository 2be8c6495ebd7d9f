"""PySpark jobs over the request metrics the broker mirrors to Parquet."""
