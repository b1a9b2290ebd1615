//! `launch --gpus`: one trainer per GPU. NVML says how many GPUs the node has and which NUMA
//! node each is attached to; each trainer gets `CUDA_VISIBLE_DEVICES` (NVML's index, with
//! `CUDA_DEVICE_ORDER=PCI_BUS_ID` so that CUDA numbers them as NVML does) and runs on the CPUs of
//! its GPU's NUMA node (`sched_setaffinity`), where its staging thread then runs
//! (`HYDROFEED_NUMA_NODE` names the node). The ring's pages are the feeder's, not placed.

use std::os::unix::process::CommandExt;
use std::process::Command;

use anyhow::bail;
use hydrofeed_tfbridge::gpu::{self, GpuInfo};

/// The GPU a rank trains on.
pub(super) type RankGpu = Option<GpuInfo>;

/// `(workers, one GPU per rank)` from `--gpus` and `--workers`.
pub(super) fn plan(
    gpus: Option<&str>,
    workers: Option<u32>,
) -> anyhow::Result<(u32, Vec<RankGpu>)> {
    let Some(spec) = gpus.filter(|s| *s != "none") else {
        let Some(w) = workers else {
            bail!("--workers N is needed (or --gpus auto: one trainer per GPU)")
        };
        return Ok((w, vec![None; w as usize]));
    };
    let found = gpu::gpus().map_err(|e| anyhow::anyhow!("--gpus {spec}: {e}"))?;
    let chosen: Vec<GpuInfo> = if spec == "auto" {
        found
    } else {
        let mut v = Vec::new();
        for s in spec.split(',') {
            let i: u32 = s.trim().parse().map_err(|_| {
                anyhow::anyhow!("--gpus {spec}: expected auto, none or GPU indices like 0,1")
            })?;
            match found.iter().find(|g| g.index == i) {
                Some(g) => v.push(g.clone()),
                None => bail!(
                    "--gpus {spec}: this node has no GPU {i} (NVML lists {})",
                    found.len()
                ),
            }
        }
        v
    };
    if chosen.is_empty() {
        bail!("--gpus {spec}: NVML lists no GPU on this node");
    }
    let n = chosen.len() as u32;
    if let Some(w) = workers {
        if w != n {
            bail!(
                "--workers {w} with --gpus {spec} ({n} GPU(s)): one trainer per GPU; leave \
                 --workers out"
            );
        }
    }
    Ok((n, chosen.into_iter().map(Some).collect()))
}

/// Points a trainer at its GPU and its GPU's NUMA node.
pub(super) fn place(c: &mut Command, g: &GpuInfo) {
    c.env("CUDA_VISIBLE_DEVICES", g.index.to_string())
        .env("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
        .env("HYDROFEED_GPU", g.index.to_string());
    if let Some(node) = g.numa_node {
        c.env("HYDROFEED_NUMA_NODE", node.to_string());
    }
    if let Some(cpus) = g.cpus.clone() {
        // SAFETY: runs in the child between fork and exec; builds the set on the stack and calls
        // only `sched_setaffinity`, which is async-signal-safe.
        unsafe {
            c.pre_exec(move || {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                for &cpu in &cpus {
                    if cpu < libc::CPU_SETSIZE as usize {
                        libc::CPU_SET(cpu, &mut set);
                    }
                }
                // Best effort: a cgroup may not allow those CPUs; the trainer then runs anywhere.
                let _ = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                Ok(())
            });
        }
    }
}

/// One line per GPU for the launch banner.
pub(super) fn describe(plan: &[RankGpu]) -> Option<String> {
    let parts: Vec<String> = plan
        .iter()
        .enumerate()
        .filter_map(|(r, g)| {
            g.as_ref().map(|g| {
                format!(
                    "rank {r} -> GPU {} ({}, {}{})",
                    g.index,
                    g.name,
                    g.pci_bus_id,
                    g.numa_node
                        .map(|n| format!(", NUMA node {n}"))
                        .unwrap_or_default()
                )
            })
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_gpus_workers_are_needed_and_kept() {
        assert_eq!(plan(None, Some(3)).unwrap().0, 3);
        assert_eq!(plan(Some("none"), Some(2)).unwrap().1, vec![None, None]);
        let e = plan(None, None).unwrap_err().to_string();
        assert!(e.contains("--workers N is needed"), "{e}");
    }

    #[test]
    fn gpus_on_a_host_without_a_driver_say_so() {
        // With NVIDIA's driver this plans the GPUs; without, one clear error naming the flag.
        match plan(Some("auto"), None) {
            Ok((n, g)) => assert_eq!(n as usize, g.len()),
            Err(e) => {
                let e = e.to_string();
                assert!(e.starts_with("--gpus auto: no CUDA device"), "{e}");
            }
        }
        let e = plan(Some("x"), None).unwrap_err().to_string();
        assert!(e.contains("--gpus x"), "{e}");
    }
}
