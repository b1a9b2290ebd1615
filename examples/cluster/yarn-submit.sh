#!/usr/bin/env bash
# TensorFlowOnSpark's MNIST on YARN with hydrofeed's file mode: each executor runs a trainer and
# a `hydrofeed feeder`, which reads the Parquet files from HDFS into the trainer's ring.
# Environment: the packed venv from make-env.sh. (Kerberized HDFS is not supported by the feeders
# yet: see docs/arch/hdfs.md.)
set -euo pipefail
EXECUTORS=${EXECUTORS:-4}
spark-submit \
  --master yarn --deploy-mode cluster \
  --num-executors "$EXECUTORS" --executor-cores 4 --executor-memory 8G \
  --conf spark.executor.memoryOverhead=2G \
  --conf spark.dynamicAllocation.enabled=false \
  --conf spark.task.cpus=4 \
  --conf spark.yarn.maxAppAttempts=1 \
  --archives hydrofeed-env.tar.gz#env \
  --conf spark.pyspark.python=./env/bin/python \
  --conf spark.pyspark.driver.python=./env/bin/python \
  --conf spark.executorEnv.HADOOP_CONF_DIR=/etc/hadoop/conf \
  examples/mnist_keras_files.py \
    --cluster_size "$EXECUTORS" \
    --images_labels "hdfs:///user/${USER}/mnist/parquet" \
    --epochs 3 --batch_size 64 \
    --export_dir "hdfs:///user/${USER}/mnist_export"
