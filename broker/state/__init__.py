"""Cluster state shared by a cluster's brokers: brokers, topics and partitions
(cluster.py), partition logs of opaque record batches (log.py, records.py) and the
group coordinator (groups.py)."""
