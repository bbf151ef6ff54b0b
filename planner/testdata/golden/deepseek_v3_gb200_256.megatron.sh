# moetune plan for Megatron-LM / Megatron-Core (pretrain_gpt.py)
# problem: deepseek-v3 on 256 x gb200-nvl72, seq 4096, gbs 1024
# generated_at: 2026-11-29T18:00:00Z
# predicted: 1000.0 tokens/s/GPU, 300.0 TFLOPS/GPU (MFU 25.0%), step 10.000 s, peak memory 105.0 GiB of 185.0 GiB
# 80% interval 700.0 .. 1100.0 tokens/s/GPU (settings no published run measured; activation offload)
# host memory for offloaded activations: 40.0 GiB of 223.5 GiB per GPU
# cost source: datasheet prior
# layout: tp=1 pp=4 vp=4 ep=64 etp=1 cp=1 dp=64 mbs=1 first_stage_layers=4 last_stage_layers=1 (dp=64)
# knobs: precision=bf16 recompute=selective(mla_up_proj,layernorm,moe_act) offload=expert_fc1,moe_act dispatcher=fused_dedup grouped_gemm=true overlap(tp,ep,dp,pp)=1111 streams=1 cuda_graphs=true optimizer_states=bf16
# You add: data (--data-path), tokenizer (--tokenizer-type, --tokenizer-model), training length and learning rate (--train-iters, --lr, ...), checkpoint paths (--save, --load).
# Then: torchrun ... pretrain_gpt.py "${MEGATRON_ARGS[@]}" <your flags>
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
export NCCL_GRAPH_REGISTER=0
export NVTE_CPU_OFFLOAD_V1=1
MEGATRON_ARGS=(
  # model shape and architecture (as the Hugging Face config builds it)
  --num-layers 61
  --hidden-size 7168
  --num-attention-heads 128
  --multi-latent-attention
  --q-lora-rank 1536
  --kv-lora-rank 512
  --qk-head-dim 128
  --qk-pos-emb-head-dim 64
  --v-head-dim 128
  --disable-bias-linear
  --qk-layernorm
  --ffn-hidden-size 18432
  --swiglu
  --vocab-size 129280
  --untie-embeddings-and-output-weights
  --position-embedding-type rope
  --rotary-base 10000
  --rope-type yarn
  --rotary-scaling-factor 40
  --mscale 1
  --mscale-all-dim 1
  --normalization RMSNorm
  --norm-epsilon 1e-06
  --num-experts 256
  --moe-router-topk 8
  --moe-ffn-hidden-size 2048
  --moe-shared-expert-intermediate-size 2048
  --moe-layer-freq '([0]*3+[1]*58)'
  --moe-router-score-function sigmoid
  --moe-router-enable-expert-bias
  --moe-router-topk-scaling-factor 2.5
  --moe-router-num-groups 8
  --moe-router-group-topk 4
  --moe-router-dtype fp32
  --mtp-num-layers 1
  --attention-dropout 0.0
  --hidden-dropout 0.0
  # batch and sequence
  --seq-length 4096
  --max-position-embeddings 163840
  --micro-batch-size 1
  --global-batch-size 1024
  # parallel layout: dp = 256 / (tp 1 x pp 4 x cp 1) = 64
  --tensor-model-parallel-size 1
  --pipeline-model-parallel-size 4
  # transformer layers per virtual stage (rank = stage % pp): 4 4 4 4 4 4 4 4 4 4 4 4 4 4 4 1
  --pipeline-model-parallel-layout 'Et*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|tmL'
  --context-parallel-size 1
  --expert-model-parallel-size 64
  --expert-tensor-parallel-size 1
  --use-distributed-optimizer
  --grad-reduce-in-bf16
  # optimizer state: fp32 master weights, BF16 Adam moments and main gradients (Transformer Engine's precision-aware FusedAdam), 8 B per parameter
  --use-precision-aware-optimizer
  --main-grads-dtype bf16
  --exp-avg-dtype bf16
  --exp-avg-sq-dtype bf16
  # recompute and activation offload
  --recompute-granularity selective
  --recompute-modules mla_up_proj layernorm moe_act
  --fine-grained-activation-offloading
  --offload-modules expert_fc1 moe_act
  # MoE dispatch and experts
  --moe-token-dispatcher-type flex
  --moe-flex-dispatcher-backend hybridep
  --moe-grouped-gemm
  --moe-permute-fusion
  # benchmark run: forced-balanced routing, as the published tables run; real training: moetune --routing natural
  --moe-router-force-load-balancing
  # communication overlap
  --overlap-grad-reduce
  --overlap-param-gather
  --overlap-moe-expert-parallel-comm
  --delay-wgrad-compute
  # CUDA graphs
  --cuda-graph-impl transformer_engine
  --cuda-graph-modules attn moe_router moe_preprocess
  --te-rng-tracker
  # precision: bf16
  --bf16
)
