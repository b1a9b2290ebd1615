#!/usr/bin/env bash
# The same job on Kubernetes: the image carries the environment (Dockerfile beside this file),
# the pod template gives each executor memory for its rings (memfd pages count against the
# pod's memory limit: spark.executor.memoryOverhead covers them).
set -euo pipefail
K8S_API=${K8S_API:?the API server, e.g. https://k8s.example.com:6443}
IMAGE=${IMAGE:?the image built from examples/cluster/Dockerfile}
EXECUTORS=${EXECUTORS:-4}
spark-submit \
  --master "k8s://${K8S_API}" --deploy-mode cluster \
  --name hydrofeed-mnist \
  --conf spark.executor.instances="$EXECUTORS" \
  --conf spark.executor.cores=4 --conf spark.task.cpus=4 \
  --conf spark.executor.memory=8g --conf spark.executor.memoryOverhead=2g \
  --conf spark.dynamicAllocation.enabled=false \
  --conf spark.kubernetes.container.image="$IMAGE" \
  --conf spark.kubernetes.namespace="${NAMESPACE:-default}" \
  --conf spark.kubernetes.authenticate.driver.serviceAccountName="${SERVICE_ACCOUNT:-spark}" \
  --conf spark.kubernetes.executor.podTemplateFile=examples/cluster/pod-template.yaml \
  --conf spark.pyspark.python=/opt/hydrofeed/bin/python \
  local:///opt/hydrofeed/examples/mnist_keras_files.py \
    --cluster_size "$EXECUTORS" \
    --images_labels "${DATA:-hdfs://namenode:9000/mnist/parquet}" \
    --epochs 3 --batch_size 64 \
    --export_dir "${EXPORT:-hdfs://namenode:9000/mnist_export}"
