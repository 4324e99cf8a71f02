//! Pipeline parallelism over a distributed group (Python: `mlx_lm.models.pipeline`'s
//! `PipelineMixin` and the stacks that use it): each process keeps a run of consecutive
//! layers, takes the hidden states from the process holding the layers before them and hands
//! its own on, so a model whose layers do not fit one device runs over several.

use std::fmt;
use std::hash::{Hash, Hasher};

use mlx_rs::distributed::{self, Group};
use mlx_rs::{ops, Array, Error, Result};
use mlx_tree::serde_json::Value as Json;
use mlx_tree::{StaticData, TreeNode};

use crate::cache::LayerCache;

/// Which layers this process runs, and the group the hidden states travel over. As in
/// mlx_lm, the layers are split in reverse: rank 0 holds the last layers (and so ends with
/// the final hidden states), the last rank the first ones.
#[derive(Clone)]
pub struct PipelineStage {
    group: Group,
    /// The first of this process's layers, in the whole model's numbering.
    pub start: usize,
    /// One past the last of them.
    pub end: usize,
}

impl PipelineStage {
    /// Python: `PipelineMixin.pipeline(group, split=None)`: `layers` split over `group`,
    /// `split[r]` layers for rank `r` (`None`: as even as can be, the low ranks taking the
    /// extra layers).
    pub fn new(group: &Group, layers: usize, split: Option<&[usize]>) -> Result<PipelineStage> {
        let (rank, size) = (group.rank() as usize, group.size() as usize);
        let split: Vec<usize> = match split {
            Some(s) => s.to_vec(),
            None => {
                let (base, extra) = (layers / size, layers % size);
                (0..size).map(|r| base + usize::from(r < extra)).collect()
            }
        };
        if split.len() != size {
            return Err(Error::InvalidArgument(format!(
                "[pipeline] split has {} entries for group size {size}",
                split.len()
            )));
        }
        if split.contains(&0) || split.iter().sum::<usize>() != layers {
            return Err(Error::InvalidArgument(format!(
                "[pipeline] split {split:?} must be positive and sum to {layers} layers"
            )));
        }
        let start = split[rank + 1..].iter().sum::<usize>();
        Ok(PipelineStage {
            group: group.clone(),
            start,
            end: start + split[rank],
        })
    }

    /// Splits a stack's `layers` over `group` into `slot`, the stack's stage (Python:
    /// `PipelineMixin.pipeline(group, split)`): keeps this process's run of layers. Once
    /// only: a stack already split is an `Err`, as is a split that does not fit the layers.
    pub fn split_layers<L>(
        slot: &mut Option<PipelineStage>,
        layers: &mut Vec<L>,
        group: &Group,
        split: Option<&[usize]>,
    ) -> Result<()> {
        if slot.is_some() {
            return Err(Error::InvalidArgument(
                "[pipeline] the model is already split into stages".into(),
            ));
        }
        let stage = PipelineStage::new(group, layers.len(), split)?;
        layers.truncate(stage.end);
        layers.drain(..stage.start);
        *slot = Some(stage);
        Ok(())
    }

    /// The group the stages exchange hidden states over.
    pub fn group(&self) -> &Group {
        &self.group
    }

    /// The hidden states this stage starts from: `h` on the last rank (which holds the first
    /// layers), else what the next rank sends (Python: `recv_like(h, rank + 1)`).
    pub fn receive(&self, h: &Array) -> Result<Array> {
        let (rank, size) = (self.group.rank(), self.group.size());
        if rank < size - 1 {
            distributed::recv_like(h, rank + 1, Some(&self.group))
        } else {
            Ok(h.clone())
        }
    }

    /// Hands this stage's output `h` (rows `[n, hidden]`) on to the previous rank and gives
    /// every rank the last stage's output (rank 0's), which stays in the graph of the send
    /// (Python: `send(h, rank - 1)`, then `all_gather(h)[: h.shape[0]]`). Also returns the
    /// send, on the ranks that send.
    pub fn hand_on(&self, h: &Array) -> Result<(Array, Option<Array>)> {
        let (rank, size) = (self.group.rank(), self.group.size());
        let sent = if rank != 0 {
            Some(distributed::send(h, rank - 1, Some(&self.group))?)
        } else {
            None
        };
        let h = sent.clone().unwrap_or_else(|| h.clone());
        if size == 1 {
            return Ok((h, sent));
        }
        let n = h.shape()[0];
        Ok((
            distributed::all_gather(&h, Some(&self.group))?.index(..n)?,
            sent,
        ))
    }

    /// This stage's part of a forward: receives the hidden states (`h` on the last rank),
    /// runs `layers` on them with the stage's caches, hands the result on and returns the
    /// last stage's output, the send kept in the graph of the last cache.
    pub fn forward(
        &self,
        h: Array,
        mut cache: Option<&mut [LayerCache]>,
        layers: impl FnOnce(Array, Option<&mut [LayerCache]>) -> Result<Array>,
    ) -> Result<Array> {
        let h = layers(self.receive(&h)?, cache.as_deref_mut())?;
        let (h, sent) = self.hand_on(&h)?;
        if let (Some(sent), Some(last)) = (sent, cache.and_then(|c| c.last_mut())) {
            self.depend_on_send(last, &sent)?;
        }
        Ok(h)
    }

    /// Makes the first array of `cache` (a stage's last layer's) wait for `sent`: a prefill
    /// evaluates only the cache, and without it the send would never run while the previous
    /// rank waits to receive it (Python: `cache[-1].keys = mx.depends(cache[-1].keys, h)`).
    pub fn depend_on_send(&self, cache: &mut LayerCache, sent: &Array) -> Result<()> {
        let mut first = true;
        let mut result = Ok(());
        let walked = cache.leaves_mut(&mut |leaf: &mut Array| {
            if std::mem::take(&mut first) {
                match ops::depends([&*leaf], [sent]) {
                    Ok(mut d) => *leaf = d.remove(0),
                    Err(e) => result = Err(e),
                }
            }
        });
        walked.map_err(|e| Error::InvalidArgument(e.to_string()))?;
        result
    }
}

impl fmt::Debug for PipelineStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelineStage")
            .field("group", &self.group)
            .field("start", &self.start)
            .field("end", &self.end)
            .finish()
    }
}

/// A trace made for one stage replays only for the same communicator and layers: the group
/// is baked into the trace's send, receive and gather.
impl StaticData for PipelineStage {
    fn static_eq(&self, other: &Self) -> bool {
        Group::ptr_eq(&self.group, &other.group)
            && (self.start, self.end) == (other.start, other.end)
    }

    fn static_hash<H: Hasher>(&self, state: &mut H) {
        (self.group.rank(), self.group.size(), self.start, self.end).hash(state);
    }

    fn to_json(&self) -> Result<Json> {
        Err(Error::InvalidArgument(
            "a pipeline stage holds a live communicator and cannot be written".into(),
        ))
    }

    fn from_json(json: &Json) -> Result<Self> {
        Err(Error::InvalidArgument(format!(
            "static data {json} cannot be read back as a pipeline stage (a live communicator)"
        )))
    }
}
