//! Fine-tuning (Python: `mlx_lm.tuner`): mlx_lm's datasets and batching, and adapters.

mod adapters;
mod batches;
mod config;
mod datasets;
mod mt19937;
mod trainer;

pub use adapters::{
    fuse_adapters, linear_to_lora_layers, load_adapters, unfreeze_last_layers, AdapterConfig,
    FineTuneType, LoraParameters,
};
pub use batches::{iterate_batches, Batch, BatchIterator, Example};
pub use config::{
    build_schedule, config_defaults, load_config_file, AdafactorConfig, AdamConfig, AdamWConfig,
    LoraConfig, LoraParametersConfig, LrSchedule, MuonConfig, OptimizerConfig, SgdConfig,
};
pub use datasets::{load_local_dataset, Dataset, DatasetFormat, DatasetOptions, Splits};
pub use mt19937::RandomState;
pub use trainer::{default_loss, evaluate, save_adapters, trainable_parameters, TrainStep};
