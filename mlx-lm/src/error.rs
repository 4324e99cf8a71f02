//! Errors of model loading: each names the file, and the key where there is one, so a broken
//! checkpoint can be fixed without a debugger.

use std::path::PathBuf;

/// What can go wrong reading a model directory.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not valid JSON: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// A file parsed, but a value in it is missing or of the wrong kind.
    #[error("{path}: {key}: {message}")]
    Invalid {
        path: PathBuf,
        key: String,
        message: String,
    },
    /// The model has a parameter the checkpoint lacks.
    #[error("{dir}: the checkpoint has no tensor {key}")]
    MissingWeight { dir: PathBuf, key: String },
    /// `config.json` has keys the architecture neither reads nor declares harmless, which may
    /// change the numerics (under [`UnreadKeys::Error`](crate::UnreadKeys::Error)).
    #[error(
        "{path}: {model_type} does not read {}, which may change the numerics",
        keys.join(", ")
    )]
    UnreadConfigKeys {
        path: PathBuf,
        model_type: String,
        keys: Vec<String>,
    },
    /// `config.json` names an architecture that is not registered.
    #[error("{path}: model_type {model_type:?} is not supported (registered: {supported})")]
    UnsupportedModel {
        path: PathBuf,
        model_type: String,
        supported: String,
    },
    /// The caller's arguments do not fit: an empty prompt, a token outside the vocabulary,
    /// a cache of another model, sampling options out of range.
    #[error("{0}")]
    InvalidArgument(String),
    /// MLX failed while running a model.
    #[error(transparent)]
    Run(mlx_rs::Error),
    #[error("no safetensors found in {dir} (looked for model*.safetensors)")]
    NoWeights { dir: PathBuf },
    #[error("{index}: shard {shard} (holding {key}) does not exist")]
    MissingShard {
        index: PathBuf,
        shard: String,
        key: String,
    },
    #[error("{index} places {key} in {shard}, which does not contain it")]
    MissingTensor {
        index: PathBuf,
        shard: PathBuf,
        key: String,
    },
    /// `tokenizer.json` does not parse, the tokenizer failed on an input (`source`: the
    /// `tokenizers` error), or a token is outside its vocabulary (no source).
    #[error("{path}: {message}")]
    Tokenizer {
        path: PathBuf,
        message: String,
        #[source]
        source: Option<tokenizers::Error>,
    },
    /// A chat template that does not parse, fails while rendering (`raise_exception`
    /// included; `source`: the `minijinja` error), or gets a conversation it cannot take (no
    /// source).
    #[error("{path}: chat template: {message}")]
    Template {
        path: PathBuf,
        message: String,
        #[source]
        source: Option<minijinja::Error>,
    },
    /// MLX refused a file or an array in it.
    #[error("{path}: {source}")]
    Mlx {
        path: PathBuf,
        source: mlx_rs::Error,
    },
}

/// An mlx-rs error met while running a model is [`Error::Run`], except a rejected argument
/// (`mlx_rs::Error::InvalidArgument`, raised before MLX runs anything: a token batch of the
/// wrong rank, a cache of another model), which is the caller's mistake.
impl From<mlx_rs::Error> for Error {
    fn from(e: mlx_rs::Error) -> Self {
        match e {
            mlx_rs::Error::InvalidArgument(message) => Error::InvalidArgument(message),
            e => Error::Run(e),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
