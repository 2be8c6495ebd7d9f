#!/usr/bin/env bash
# The report and the what-if over the metrics that metrics_and_spark.py wrote under RUN.
# MASTER chooses the Spark master (default local[2]; e.g. spark://127.0.0.1:7077).
set -euo pipefail
RUN=${1:-run}
MASTER=${MASTER:-local[2]}
# Small inputs: few shuffle partitions. Drop this for a big run.
CONF=(--conf spark.sql.shuffle.partitions=2 --conf spark.ui.enabled=false)
here=$(dirname "$0")

# Tables and plots per entity, API and client software; open $RUN/report/index.html.
kafka-mock-report --metrics "$RUN/metrics" --out "$RUN/report" --master "$MASTER" "${CONF[@]}" --window 1s

# What if the default client id got 2 MiB/s and loader's own quota went?
# Today's quotas (the state dir), then the change, over the recorded requests.
kafka-mock-report what-if --metrics "$RUN/metrics" \
    --quotas "$RUN/state/quotas.sqlite" --quotas "$here/change.json" \
    --quota-window-num 2 --quota-window-size-seconds 1 \
    --out "$RUN/what-if" --master "$MASTER" "${CONF[@]}"
ls "$RUN/report" "$RUN/what-if"
