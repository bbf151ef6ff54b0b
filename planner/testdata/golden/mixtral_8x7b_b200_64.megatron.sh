# moetune plan for Megatron-LM / Megatron-Core (pretrain_gpt.py)
# problem: mixtral-8x7b on 64 x b200, seq 4096, gbs 512
# generated_at: 2026-11-29T18:00:00Z
# predicted: 1000.0 tokens/s/GPU, 300.0 TFLOPS/GPU (MFU 25.0%), step 10.000 s, peak memory 105.0 GiB of 179.1 GiB
# cost source: datasheet prior
# layout: tp=2 pp=2 vp=2 ep=8 etp=2 cp=1 dp=16 mbs=2 shard_params=true (dp=16)
# knobs: precision=nvfp4 recompute=none offload=none dispatcher=alltoall grouped_gemm=false overlap(tp,ep,dp,pp)=0111 streams=2 cuda_graphs=true
# You add: data (--data-path), tokenizer (--tokenizer-type, --tokenizer-model), training length and learning rate (--train-iters, --lr, ...), checkpoint paths (--save, --load).
# Then: torchrun ... pretrain_gpt.py "${MEGATRON_ARGS[@]}" <your flags>
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
export NCCL_GRAPH_REGISTER=0
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
  --vocab-size 32000
  --untie-embeddings-and-output-weights
  --position-embedding-type rope
  --rotary-base 1000000
  --normalization RMSNorm
  --norm-epsilon 1e-05
  --num-experts 8
  --moe-router-topk 2
  --moe-ffn-hidden-size 14336
  --moe-router-dtype fp32
  --attention-dropout 0.0
  --hidden-dropout 0.0
  # batch and sequence
  --seq-length 4096
  --max-position-embeddings 32768
  --micro-batch-size 2
  --global-batch-size 512
  # parallel layout: dp = 64 / (tp 2 x pp 2 x cp 1) = 16
  --tensor-model-parallel-size 2
  --sequence-parallel
  --pipeline-model-parallel-size 2
  --num-layers-per-virtual-pipeline-stage 8
  --context-parallel-size 1
  --expert-model-parallel-size 8
  --expert-tensor-parallel-size 2
  --use-distributed-optimizer
  --grad-reduce-in-bf16
  # FSDP: parameters, gradients and optimizer states sharded over dp
  --use-megatron-fsdp
  --data-parallel-sharding-strategy optim_grads_params
  --ckpt-format fsdp_dtensor
  # recompute and activation offload
  # no recompute
  # no activation offload
  # MoE dispatch and experts
  --moe-token-dispatcher-type alltoall
  # grouped GEMM off: TE runs one GEMM per local expert
  --moe-permute-fusion
  # benchmark run: forced-balanced routing, as the published tables run; real training: moetune --routing natural
  --moe-router-force-load-balancing
  # communication overlap
  --overlap-grad-reduce
  --overlap-param-gather
  # no --tp-comm-overlap: Transformer Engine userbuffers has no NVFP4 path
  --overlap-moe-expert-parallel-comm
  --delay-wgrad-compute
  # planned with 2 communication streams (Megatron picks its own)
  # CUDA graphs
  --cuda-graph-impl transformer_engine
  --cuda-graph-modules attn moe_router moe_preprocess
  --te-rng-tracker
  # precision: nvfp4
  --bf16
  --fp4-format e2m1
  --fp4-recipe nvfp4
)
