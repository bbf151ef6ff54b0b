# Fixture: the fields of the release tags' WorkloadBaseConfig the audit reads.
from dataclasses import dataclass
from typing import List, Optional


@dataclass(frozen=True)
class WorkloadBaseConfig:
    num_gpus: int = 1
    tensor_model_parallel_size: int = 1
    pipeline_model_parallel_size: int = 1
    context_parallel_size: int = 1
    virtual_pipeline_model_parallel_size: int | None = None
    expert_model_parallel_size: int = 1
    global_batch_size: int = 1
    micro_batch_size: int = 1
    use_megatron_fsdp: Optional[bool] = None
    recompute_modules: Optional[List[str]] = None
    moe_a2a_overlap: Optional[bool] = False

    @property
    def sequence_parallel(self) -> bool:
        return self.tensor_model_parallel_size > 1
