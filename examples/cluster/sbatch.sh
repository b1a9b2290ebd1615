#!/bin/bash
# hydrofeed launch across the nodes of a Slurm allocation: one task per node, node k of the
# job is SLURM_NODEID k, node 0 (the first host of the allocation) runs the coordinator.
#SBATCH --job-name=hydrofeed
#SBATCH --nodes=3
#SBATCH --ntasks-per-node=1
#SBATCH --time=04:00:00
set -euo pipefail

NNODES=${SLURM_NNODES:-3}
# The first host of the allocation is node 0.
HEAD=${HEAD:-$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)}
PORT=${PORT:-29400}
# One token for the job, in a file only the job's user reads (on the shared file system).
TOKEN_FILE=${TOKEN_FILE:-$HOME/.hydrofeed/token-$SLURM_JOB_ID}
mkdir -p "$(dirname "$TOKEN_FILE")"
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$TOKEN_FILE")

srun --nodes="$NNODES" --ntasks-per-node=1 bash -c '
  exec hydrofeed launch --nnodes '"$NNODES"' --node-rank "$SLURM_NODEID" \
    --rdzv-endpoint '"$HEAD:$PORT"' --token-file '"$TOKEN_FILE"' \
    ${LOCAL_ADDR:+--local-addr "$LOCAL_ADDR"} \
    --max-restarts 1 --workers ${WORKERS:-1} --batch-size ${BATCH:-64} \
    --input '"${INPUT:?set INPUT}"' -- '"${TRAIN:-python train.py}"
