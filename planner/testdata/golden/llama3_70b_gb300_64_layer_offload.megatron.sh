# moetune plan for Megatron-LM / Megatron-Core (pretrain_gpt.py)
# problem: llama3-70b on 64 x gb300-nvl72, seq 8192, gbs 256
# generated_at: 2026-11-29T18:00:00Z
# predicted: 1000.0 tokens/s/GPU, 300.0 TFLOPS/GPU (MFU 25.0%), step 10.000 s, peak memory 105.0 GiB of 277.5 GiB
# cost source: datasheet prior
# layout: tp=1 pp=1 vp=1 ep=1 etp=1 cp=1 dp=64 mbs=2 shard_params=true (dp=64)
# knobs: precision=fp8 recompute=none offload=none offload_layers=20 dispatcher=fused_dedup grouped_gemm=true overlap(tp,ep,dp,pp)=1111 streams=2 cuda_graphs=false
# You add: data (--data-path), tokenizer (--tokenizer-type, --tokenizer-model), training length and learning rate (--train-iters, --lr, ...), checkpoint paths (--save, --load).
# Then: torchrun ... pretrain_gpt.py "${MEGATRON_ARGS[@]}" <your flags>
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
MEGATRON_ARGS=(
  # model shape and architecture (as the Hugging Face config builds it)
  --num-layers 80
  --hidden-size 8192
  --num-attention-heads 64
  --kv-channels 128
  --group-query-attention
  --num-query-groups 8
  --disable-bias-linear
  --ffn-hidden-size 28672
  --swiglu
  --vocab-size 128256
  --untie-embeddings-and-output-weights
  --position-embedding-type rope
  --rotary-base 500000
  --normalization RMSNorm
  --norm-epsilon 1e-05
  --attention-dropout 0.0
  --hidden-dropout 0.0
  # batch and sequence
  --seq-length 8192
  --max-position-embeddings 8192
  --micro-batch-size 2
  --global-batch-size 256
  # parallel layout: dp = 64 / (tp 1 x pp 1 x cp 1) = 64
  --tensor-model-parallel-size 1
  --pipeline-model-parallel-size 1
  --context-parallel-size 1
  --use-distributed-optimizer
  --grad-reduce-in-bf16
  # FSDP: parameters, gradients and optimizer states sharded over dp
  --use-megatron-fsdp
  --data-parallel-sharding-strategy optim_grads_params
  --ckpt-format fsdp_dtensor
  # recompute and activation offload
  # no recompute
  # layer-wise activation offload: the first layers' saved tensors to host memory
  --cpu-offloading-num-layers 20
  # communication overlap
  --overlap-grad-reduce
  --overlap-param-gather
  # planned with 2 communication streams (Megatron picks its own)
  # CUDA graphs
  --cuda-graph-impl none
  # precision: fp8
  --bf16
  --fp8-format hybrid
  --fp8-recipe tensorwise
)
