//! GPU discovery through NVML (`libnvidia-ml.so.1`, loaded at run time): how many GPUs a node
//! has, where each sits on PCIe and which NUMA node it is attached to, and how busy it is.

use std::sync::OnceLock;

use nvml_wrapper::Nvml;

use super::GpuError;

/// One GPU as NVML sees it (indices are NVML's, which `CUDA_VISIBLE_DEVICES` uses when
/// `CUDA_DEVICE_ORDER=PCI_BUS_ID`; NVML enumerates by PCI bus id).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GpuInfo {
    /// NVML index.
    pub index: u32,
    /// Product name.
    pub name: String,
    /// PCI bus id, `0000:3b:00.0` (sysfs form).
    pub pci_bus_id: String,
    /// The NUMA node its PCIe root is attached to (`None`: one node, or unknown).
    pub numa_node: Option<u32>,
    /// The CPUs of that NUMA node (`None` when unknown).
    pub cpus: Option<Vec<usize>>,
    /// Device memory in bytes.
    pub memory_bytes: u64,
}

fn nvml() -> Result<&'static Nvml, GpuError> {
    static NVML: OnceLock<Result<Nvml, String>> = OnceLock::new();
    NVML.get_or_init(|| Nvml::init().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| GpuError::NoDevice(format!("NVML (libnvidia-ml.so.1) did not start: {e}")))
}

/// NVML's `00000000:3B:00.0` as sysfs writes it: `0000:3b:00.0`.
fn sysfs_bus_id(nvml_id: &str) -> String {
    let id = nvml_id.trim_end_matches('\0').to_ascii_lowercase();
    match id.split_once(':') {
        Some((domain, rest)) if domain.len() > 4 => {
            format!("{}:{rest}", &domain[domain.len() - 4..])
        }
        _ => id,
    }
}

/// A Linux cpulist (`0-3,8-11`) as CPU numbers.
pub(crate) fn parse_cpulist(s: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    (!cpus.is_empty()).then_some(cpus)
}

/// The NUMA node of a PCI device and that node's CPUs, from sysfs.
fn numa_of(bus_id: &str) -> (Option<u32>, Option<Vec<usize>>) {
    let node = std::fs::read_to_string(format!("/sys/bus/pci/devices/{bus_id}/numa_node"))
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .filter(|&n| n >= 0)
        .map(|n| n as u32);
    let cpus = node.and_then(|n| {
        std::fs::read_to_string(format!("/sys/devices/system/node/node{n}/cpulist"))
            .ok()
            .and_then(|s| parse_cpulist(&s))
    });
    (node, cpus)
}

/// The GPUs of this node. `Err(NoDevice)` where there is no NVIDIA driver.
pub fn gpus() -> Result<Vec<GpuInfo>, GpuError> {
    let nvml = nvml()?;
    let n = nvml
        .device_count()
        .map_err(|e| GpuError::Nvml(e.to_string()))?;
    let mut out = Vec::with_capacity(n as usize);
    for index in 0..n {
        let d = nvml
            .device_by_index(index)
            .map_err(|e| GpuError::Nvml(format!("device {index}: {e}")))?;
        let pci_bus_id = d
            .pci_info()
            .map(|p| sysfs_bus_id(&p.bus_id))
            .unwrap_or_default();
        let (numa_node, cpus) = numa_of(&pci_bus_id);
        out.push(GpuInfo {
            index,
            name: d.name().unwrap_or_default(),
            pci_bus_id,
            numa_node,
            cpus,
            memory_bytes: d.memory_info().map(|m| m.total).unwrap_or(0),
        });
    }
    Ok(out)
}

/// Percent of the last sample period in which a kernel ran on GPU `index` (NVML index).
pub fn utilization(index: u32) -> Result<u32, GpuError> {
    let d = nvml()?
        .device_by_index(index)
        .map_err(|e| GpuError::Nvml(format!("device {index}: {e}")))?;
    d.utilization_rates()
        .map(|u| u.gpu)
        .map_err(|e| GpuError::Nvml(format!("device {index}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_ids_and_cpulists() {
        assert_eq!(sysfs_bus_id("00000000:3B:00.0"), "0000:3b:00.0");
        assert_eq!(sysfs_bus_id("0000:3b:00.0"), "0000:3b:00.0");
        assert_eq!(
            parse_cpulist("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpulist(""), None);
        assert_eq!(parse_cpulist("x"), None);
    }

    #[test]
    fn without_a_driver_discovery_says_no_device() {
        // On a host with the NVIDIA driver this lists its GPUs; without, one clear error.
        match gpus() {
            Ok(g) => assert!(g.iter().all(|g| !g.pci_bus_id.is_empty())),
            Err(e) => assert!(e.to_string().starts_with("no CUDA device"), "{e}"),
        }
    }
}
