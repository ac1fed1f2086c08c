"""The end-to-end HAT pipeline (`hatkit run`): data, the five models of the ablation, every
evaluation suite on each, and the report."""

from .config import PROFILES, PipelineConfig, PipelineConfigError, load_pipeline_config
from .run import RunMismatchError, prepare, run_pipeline
from .stages import ROWS, RunDir, Stage, plan

__all__ = ["PROFILES", "ROWS", "PipelineConfig", "PipelineConfigError", "RunDir", "RunMismatchError",
           "Stage", "load_pipeline_config", "plan", "prepare", "run_pipeline"]
