# moetune plan for Megatron-LM / Megatron-Core (pretrain_gpt.py)
# problem: llama3.1-405b on 512 x gb200-nvl72, seq 8192, gbs 1152
# generated_at: 2026-11-29T18:00:00Z
# predicted: 1000.0 tokens/s/GPU, 300.0 TFLOPS/GPU (MFU 25.0%), step 10.000 s, peak memory 105.0 GiB of 185.0 GiB
# cost source: datasheet prior
# layout: tp=4 pp=8 vp=8 ep=1 etp=1 cp=2 dp=8 mbs=1 first_stage_layers=1 last_stage_layers=1 rank_order=tp-cp-ep-pp-dp (dp=8)
# knobs: precision=nvfp4 recompute=none offload=none dispatcher=fused_dedup grouped_gemm=true overlap(tp,ep,dp,pp)=0111 streams=2 cuda_graphs=true
# You add: data (--data-path), tokenizer (--tokenizer-type, --tokenizer-model), training length and learning rate (--train-iters, --lr, ...), checkpoint paths (--save, --load).
# Then: torchrun ... pretrain_gpt.py "${MEGATRON_ARGS[@]}" <your flags>
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
export NCCL_GRAPH_REGISTER=0
MEGATRON_ARGS=(
  # model shape and architecture (as the Hugging Face config builds it)
  --num-layers 126
  --hidden-size 16384
  --num-attention-heads 128
  --kv-channels 128
  --group-query-attention
  --num-query-groups 8
  --disable-bias-linear
  --ffn-hidden-size 53248
  --swiglu
  --vocab-size 128256
  --untie-embeddings-and-output-weights
  --position-embedding-type rope
  --rotary-base 500000
  --use-rope-scaling
  --rope-scaling-factor 8
  --normalization RMSNorm
  --norm-epsilon 1e-05
  --attention-dropout 0.0
  --hidden-dropout 0.0
  # batch and sequence
  --seq-length 8192
  --max-position-embeddings 131072
  --micro-batch-size 1
  --global-batch-size 1152
  # parallel layout: dp = 512 / (tp 4 x pp 8 x cp 2) = 8
  --tensor-model-parallel-size 4
  --sequence-parallel
  --pipeline-model-parallel-size 8
  # transformer layers per virtual stage (rank = stage % pp): 1 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 1
  --pipeline-model-parallel-layout 'Et|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|tL'
  --context-parallel-size 2
  # rank order tp-cp-ep-pp-dp: each model replica (tp x cp x pp GPUs) on consecutive ranks, data parallel outermost
  --use-tp-pp-dp-mapping
  # dense model: the (unused) expert grid sized tp x cp so that its pipeline groups are the dense ones in this order (parallel_state.py asserts it)
  --expert-tensor-parallel-size 8
  --use-distributed-optimizer
  --grad-reduce-in-bf16
  # recompute and activation offload
  # no recompute
  # no activation offload
  # communication overlap
  --overlap-grad-reduce
  --overlap-param-gather
  # no --tp-comm-overlap: Transformer Engine userbuffers has no NVFP4 path
  # planned with 2 communication streams (Megatron picks its own)
  # CUDA graphs
  --cuda-graph-impl transformer_engine
  --te-rng-tracker
  # precision: nvfp4
  --bf16
  --fp4-format e2m1
  --fp4-recipe nvfp4
)
