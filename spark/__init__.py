"""PySpark jobs over the request metrics the broker mirrors to Parquet.

- `spark.schema`: the column contract shared with the broker's sink.
- `spark.jobs`: the aggregations (DataFrame in, DataFrame out) and the reader.
- `spark.report`: `kafka-mock-report` (Parquet tables, PNG plots, index.html).
- `spark.follow`: its `--follow` mode (Structured Streaming).
- `spark.plots`, `spark.session`: matplotlib plots; the SparkSession settings.

Importing this package imports neither pyspark nor matplotlib.
"""
