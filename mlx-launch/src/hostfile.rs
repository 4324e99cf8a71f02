//! The ring backend's hostfile for a group on this machine: free loopback ports.

use std::net::TcpListener;

use mlx_rs::distributed::RingHostfile;
use mlx_rs::{Error, Result};

/// A ring hostfile for `ranks` ranks on this machine, each listening on `connections` free
/// loopback ports.
pub fn loopback_hostfile(ranks: usize, connections: usize) -> Result<RingHostfile> {
    let ports = free_loopback_ports(ranks * connections.max(1))
        .map_err(|e| Error::io("[distributed] finding free loopback ports", e))?;
    let per_rank = connections.max(1);
    RingHostfile::new(
        ports
            .chunks(per_rank)
            .map(|c| c.iter().map(|p| format!("127.0.0.1:{p}")).collect())
            .collect(),
    )
}

/// `n` distinct loopback ports that nothing listens on, from a random point below the
/// system's ephemeral range. A port the system hands out for `bind(0)` is one it also hands
/// out as the source port of an outgoing connection, so between our choice and the rank's
/// own `bind` a connection of another group running at once could take it ("[ring]
/// Couldn't bind socket (error: 98)", seen with the tests' concurrent groups). The
/// listeners stay open until every port is chosen, so no port is picked twice.
fn free_loopback_ports(n: usize) -> std::io::Result<Vec<u16>> {
    use std::hash::{BuildHasher, Hasher};
    const LOWEST: u32 = 10_000;
    let below = ephemeral_start().unwrap_or(0).min(65_536);
    let mut listeners = Vec::with_capacity(n);
    if below >= LOWEST + 1_000 {
        let span = below - LOWEST;
        // RandomState's keys are random per process: a random start without a crate.
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let start = (random % u64::from(span)) as u32;
        for i in 0..span {
            if listeners.len() == n {
                break;
            }
            let port = LOWEST + (start + i) % span;
            let port = u16::try_from(port).expect("ports below the ephemeral range fit u16");
            if let Ok(l) = TcpListener::bind(("127.0.0.1", port)) {
                listeners.push(l);
            }
        }
    }
    // No ephemeral range known, or too few ports below it: any free port.
    while listeners.len() < n {
        listeners.push(TcpListener::bind("127.0.0.1:0")?);
    }
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
}

/// The first port of Linux's ephemeral range, where it can be read.
fn ephemeral_start() -> Option<u32> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    range.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn loopback_hostfiles_have_distinct_free_ports() {
        let h = loopback_hostfile(4, 2).unwrap();
        assert_eq!(h.size(), 4);
        assert!(h.ranks().iter().all(|r| r.len() == 2));
        let ports: Vec<u32> = h
            .ranks()
            .iter()
            .flatten()
            .map(|a| a.rsplit_once(':').unwrap().1.parse().unwrap())
            .collect();
        assert_eq!(ports.iter().collect::<HashSet<_>>().len(), 8, "{ports:?}");
        // Outside the range outgoing connections take their source ports from.
        if let Some(start) = ephemeral_start() {
            assert!(ports.iter().all(|&p| p < start), "{ports:?} vs {start}");
        }
    }
}
