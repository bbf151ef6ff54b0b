# Fixture: the next tag moved the GB300 MXFP8 preset to micro-batch 2
# without interleaving and the NVFP4 one to FSDP.
from dataclasses import replace

from utils.utils import WorkloadBaseConfig

BASE_LLAMA3_70B_CONFIG = WorkloadBaseConfig(num_gpus=64, global_batch_size=256)

LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_MX_V1 = replace(
    BASE_LLAMA3_70B_CONFIG,
    pipeline_model_parallel_size=4,
    micro_batch_size=2,
    recompute_modules=["mlp"],
)
LLAMA3_70B_PRETRAIN_CONFIG_GB300_NVFP4_V1 = replace(
    BASE_LLAMA3_70B_CONFIG, micro_batch_size=2, use_megatron_fsdp=True
)
