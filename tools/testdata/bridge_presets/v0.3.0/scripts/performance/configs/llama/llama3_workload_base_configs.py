# Fixture: presets of an older tag (a replace() chain, an alias, a value
# that is not a literal).
from dataclasses import replace

from utils.utils import WorkloadBaseConfig

SCALE = 2

BASE_LLAMA3_70B_CONFIG = WorkloadBaseConfig(num_gpus=64, global_batch_size=256)

LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_MX_V1 = replace(
    BASE_LLAMA3_70B_CONFIG,
    pipeline_model_parallel_size=4,
    virtual_pipeline_model_parallel_size=5,
)
LLAMA3_70B_PRETRAIN_CONFIG_GB300_NVFP4_V1 = LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_MX_V1
LLAMA3_70B_PRETRAIN_CONFIG_GB200_FP8_MX_V1 = replace(
    LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_MX_V1,
    tensor_model_parallel_size=SCALE,
)
