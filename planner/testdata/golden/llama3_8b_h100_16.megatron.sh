# moetune plan for Megatron-LM / Megatron-Core (pretrain_gpt.py)
# problem: llama3-8b on 16 x h100-sxm, seq 8192, gbs 128
# generated_at: 2026-11-29T18:00:00Z
# predicted: 1000.0 tokens/s/GPU, 300.0 TFLOPS/GPU (MFU 25.0%), step 10.000 s, peak memory 105.0 GiB of 79.6 GiB
# cost source: datasheet prior
# layout: tp=2 pp=1 vp=1 ep=1 etp=1 cp=2 dp=4 mbs=1 (dp=4)
# knobs: precision=fp8 recompute=full offload=none dispatcher=fused_dedup grouped_gemm=true overlap(tp,ep,dp,pp)=0000 streams=1 cuda_graphs=false
# You add: data (--data-path), tokenizer (--tokenizer-type, --tokenizer-model), training length and learning rate (--train-iters, --lr, ...), checkpoint paths (--save, --load).
# Then: torchrun ... pretrain_gpt.py "${MEGATRON_ARGS[@]}" <your flags>
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
export CUDA_DEVICE_MAX_CONNECTIONS=1
MEGATRON_ARGS=(
  # model shape and architecture (as the Hugging Face config builds it)
  --num-layers 32
  --hidden-size 4096
  --num-attention-heads 32
  --kv-channels 128
  --group-query-attention
  --num-query-groups 8
  --disable-bias-linear
  --ffn-hidden-size 14336
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
  --micro-batch-size 1
  --global-batch-size 128
  # parallel layout: dp = 16 / (tp 2 x pp 1 x cp 2) = 4
  --tensor-model-parallel-size 2
  --sequence-parallel
  --pipeline-model-parallel-size 1
  --context-parallel-size 2
  --use-distributed-optimizer
  --grad-reduce-in-bf16
  # recompute and activation offload
  --recompute-granularity full
  --recompute-method uniform
  --recompute-num-layers 1
  # no activation offload
  # communication overlap
  # CUDA graphs
  --cuda-graph-impl none
  # precision: fp8
  --bf16
  --fp8-format hybrid
  --fp8-recipe tensorwise
)
