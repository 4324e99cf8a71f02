//! Fine-tuning (Python: `mlx_lm.tuner`): mlx_lm's datasets and batching.

mod batches;
mod datasets;
mod mt19937;

pub use batches::{iterate_batches, Batch, BatchIterator, Example};
pub use datasets::{load_local_dataset, Dataset, DatasetFormat, DatasetOptions, Splits};
pub use mt19937::RandomState;
