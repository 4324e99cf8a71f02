//! mlx_lm's `TextStateMachine` (`mlx_lm/generate.py`): decoded text is split into runs of
//! one state (normal text, reasoning, a tool call) at marker strings, which are cut out.
//! Text that may be the start of a marker is held back until the next text tells. The
//! markers of a state are matched together, Aho–Corasick over characters, exactly as
//! Python matches them (so what is held back, and when, is Python's too).

use std::collections::HashMap;

/// What a run of text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TextState {
    Normal,
    Reasoning,
    Tool,
}

#[derive(Debug, Default, Clone)]
struct Node {
    children: HashMap<char, usize>,
    fail: usize,
    /// The marker ending here (or at a suffix of here): its length in characters and the
    /// state it leads to.
    matched: Option<(usize, TextState)>,
}

/// One state's markers as a trie with failure links (node 0 is the root).
#[derive(Debug, Clone)]
struct Trie {
    nodes: Vec<Node>,
}

impl Trie {
    fn new(markers: &[(String, TextState)]) -> Trie {
        let mut nodes = vec![Node::default()];
        for (marker, target) in markers {
            if marker.is_empty() {
                // An empty marker would match everywhere (Python skips it too).
                continue;
            }
            let mut n = 0;
            for c in marker.chars() {
                n = match nodes[n].children.get(&c) {
                    Some(&next) => next,
                    None => {
                        nodes.push(Node::default());
                        let next = nodes.len() - 1;
                        nodes[n].children.insert(c, next);
                        next
                    }
                };
            }
            // Python overwrites an equal marker's match with the later one.
            nodes[n].matched = Some((marker.chars().count(), *target));
        }
        // Breadth first, so a node's failure link is set before its children's.
        let mut queue: std::collections::VecDeque<usize> =
            nodes[0].children.values().copied().collect();
        while let Some(parent) = queue.pop_front() {
            let children: Vec<(char, usize)> = nodes[parent]
                .children
                .iter()
                .map(|(c, n)| (*c, *n))
                .collect();
            for (c, child) in children {
                queue.push_back(child);
                let mut fail = nodes[parent].fail;
                while fail != 0 && !nodes[fail].children.contains_key(&c) {
                    fail = nodes[fail].fail;
                }
                let target = nodes[fail].children.get(&c).copied().unwrap_or(0);
                nodes[child].fail = if target == child { 0 } else { target };
                if nodes[child].matched.is_none() {
                    nodes[child].matched = nodes[nodes[child].fail].matched;
                }
            }
        }
        Trie { nodes }
    }
}

/// The machine and one stream's place in it.
#[derive(Debug, Clone)]
pub(crate) struct TextStateMachine {
    tries: HashMap<TextState, Trie>,
    state: TextState,
    node: usize,
    /// Text read but not yet handed out: a possible marker start.
    buffer: Vec<char>,
}

impl TextStateMachine {
    /// `transitions`: per state, its markers and where each leads.
    pub(crate) fn new(
        transitions: &[(TextState, Vec<(String, TextState)>)],
        initial: TextState,
    ) -> TextStateMachine {
        let mut tries: HashMap<TextState, Trie> = transitions
            .iter()
            .map(|(s, edges)| (*s, Trie::new(edges)))
            .collect();
        for s in [TextState::Normal, TextState::Reasoning, TextState::Tool] {
            tries.entry(s).or_insert_with(|| Trie::new(&[]));
        }
        TextStateMachine {
            tries,
            state: initial,
            node: 0,
            buffer: Vec::new(),
        }
    }

    pub(crate) fn state(&self) -> TextState {
        self.state
    }

    /// Consumes a piece of text; the runs it completes, one per state passed (Python:
    /// `TextStateMachine.split`). The last run is of the current state.
    pub(crate) fn split(&mut self, text: &str) -> Vec<(TextState, String)> {
        // The node has read the buffer already.
        let start = self.buffer.len();
        self.buffer.extend(text.chars());
        let mut segments = Vec::new();
        let (mut begin, mut consumed) = (0, 0);
        let mut n = self.node;
        for i in start..self.buffer.len() {
            let c = self.buffer[i];
            let trie = &self.tries[&self.state];
            while n != 0 && !trie.nodes[n].children.contains_key(&c) {
                n = trie.nodes[n].fail;
            }
            if let Some(&next) = trie.nodes[n].children.get(&c) {
                n = next;
            }
            if let Some((len, target)) = trie.nodes[n].matched {
                let end = i + 1 - len;
                segments.push((
                    self.state,
                    self.buffer[begin..end.max(begin)].iter().collect(),
                ));
                begin = i + 1;
                consumed = i + 1;
                self.state = target;
                n = 0;
            } else if n == 0 {
                consumed = i + 1;
            }
        }
        segments.push((self.state, self.buffer[begin..consumed].iter().collect()));
        self.buffer.drain(..consumed);
        self.node = n;
        segments
    }

    /// Hands out the held-back text (Python: `flush`, at `finish_reason == "length"`).
    pub(crate) fn flush(&mut self) -> String {
        self.node = 0;
        self.buffer.drain(..).collect()
    }

    /// Drops the held-back text (Python: `discard`, at `finish_reason == "stop"`).
    pub(crate) fn discard(&mut self) {
        self.node = 0;
        self.buffer.clear();
    }
}
