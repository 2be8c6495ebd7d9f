"""PySpark jobs over the request metrics the broker mirrors to Parquet.

- `spark.schema`: the column contract shared with the broker's sink.
- `spark.jobs`: the aggregations (DataFrame in, DataFrame out) and the reader.
- `spark.report`: the batch report (Parquet tables, PNG plots, index.html).
- `spark.follow`: the same tables and page kept current (Structured Streaming).
- `spark.cli`: `kafka-mock-report`, the command line over both.
- `spark.plots`, `spark.session`: matplotlib plots; the SparkSession settings.

Importing this package or `spark.schema` imports neither pyspark nor matplotlib.
"""
