//! Where a node's worker ID comes from: configuration, the host's name or address, or the
//! coordinator.

use std::net::IpAddr;

use snowdrift_core::layout::{Field, Layout, Role};

use crate::error::{Error, Result};

/// How a node picks its worker ID. Every ID is then claimed on the registry, so a second
/// live node with the same ID is refused ([`Error::WorkerTaken`]) instead of issuing
/// duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkerSource {
    /// The lowest worker ID no live node holds, found by the coordinator (etcd, ZooKeeper,
    /// SQL, Redis, or lock files on one machine). The safe default.
    Lowest,
    /// Exactly this ID, from configuration.
    Static(u64),
    /// A hash of the host name, reduced to the node space. Two hosts can land on the same
    /// ID; the claim on the registry detects that, and a warning says so at start.
    Hostname,
    /// The low bits of an IP address (Sonyflake's choice). `None` takes this host's first
    /// non-loopback IPv4 address (of its interfaces; the address the host name resolves to
    /// when it has none). Hosts whose addresses agree in the low bits collide; the claim
    /// detects it and a warning says so at start.
    Ip(Option<IpAddr>),
    /// The low bits of the first IPv4 address (else IPv6) of the named network interface
    /// (`eth0`), as [`Ip`](Self::Ip) takes them.
    Interface(String),
    /// The ordinal of a Kubernetes StatefulSet pod: the number after the host name's last
    /// `-` (`web-3` is 3, as in CosId). Pods of one set never share an ordinal.
    StatefulSetOrdinal,
}

impl WorkerSource {
    /// The worker ID this source names within `0..space`, or `None` for
    /// [`Lowest`](Self::Lowest) (the coordinator picks). `hostname` is this host's name.
    pub fn resolve(&self, space: u64, hostname: &str) -> Result<Option<u64>> {
        let id = match self {
            WorkerSource::Lowest => return Ok(None),
            WorkerSource::Static(id) => {
                if *id >= space {
                    return Err(Error::InvalidInput(format!(
                        "static worker ID {id} does not fit the layout's node space (0..{space}); pick a smaller ID or a layout with more node bits"
                    )));
                }
                *id
            }
            WorkerSource::Hostname => {
                let id = fnv1a(hostname.as_bytes()) % space;
                tracing::warn!(
                    hostname,
                    worker_id = id,
                    "worker ID derived from the host name can collide with another host's; the coordinator refuses a second live holder, but prefer the 'lowest' source"
                );
                id
            }
            WorkerSource::Ip(_) | WorkerSource::Interface(_) => {
                let addr = self.address(hostname)?;
                let low = match addr {
                    IpAddr::V4(a) => u64::from(u32::from(a)),
                    IpAddr::V6(a) => u128::from(a) as u64,
                };
                let id = low % space;
                tracing::warn!(
                    %addr,
                    worker_id = id,
                    "worker ID derived from the IP address's low bits collides with any host whose address agrees in them; the coordinator refuses a second live holder, but prefer the 'lowest' source"
                );
                id
            }
            WorkerSource::StatefulSetOrdinal => {
                let ordinal = hostname
                    .rsplit_once('-')
                    .and_then(|(_, n)| n.parse::<u64>().ok());
                let Some(ordinal) = ordinal else {
                    return Err(Error::InvalidInput(format!(
                        "host name {hostname:?} has no StatefulSet ordinal (a '-N' suffix such as web-3); use another worker source outside a StatefulSet"
                    )));
                };
                if ordinal >= space {
                    return Err(Error::InvalidInput(format!(
                        "StatefulSet ordinal {ordinal} (host {hostname:?}) does not fit the layout's node space (0..{space}); use a layout with more node bits or fewer replicas"
                    )));
                }
                ordinal
            }
        };
        Ok(Some(id))
    }

    /// The worker ID this source names in `layout`'s node space, filled as `split` says,
    /// or `None` for [`Lowest`](Self::Lowest). With the default split this is
    /// [`resolve`](Self::resolve) over the whole node space.
    ///
    /// ```
    /// use snowdrift_core::layout::Layout;
    /// use snowdrift_store::worker::{BitsFrom, NodeSplit, WorkerSource};
    /// let twitter = Layout::preset("twitter")?; // datacenter 5 bits, worker 5 bits
    /// let ip = WorkerSource::Ip(Some("10.1.3.7".parse()?));
    /// let octets = NodeSplit::new(None, BitsFrom::Octets);
    /// assert_eq!(ip.resolve_in(&twitter, &octets, "h")?, Some(3 << 5 | 7));
    /// let fixed = NodeSplit::new(Some(2), BitsFrom::Octets);
    /// assert_eq!(ip.resolve_in(&twitter, &fixed, "h")?, Some(2 << 5 | 7));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resolve_in(
        &self,
        layout: &Layout,
        split: &NodeSplit,
        hostname: &str,
    ) -> Result<Option<u64>> {
        let space = 1u64.checked_shl(layout.node_bits()).unwrap_or(u64::MAX);
        if *split == NodeSplit::default() {
            return self.resolve(space, hostname);
        }
        if !self.is_derived() {
            return Err(Error::InvalidInput(format!(
                "a datacenter or bits_from = \"octets\" applies to derived worker IDs, not to the {}",
                self.describe()
            )));
        }
        if split.bits_from == BitsFrom::Octets
            && !matches!(self, WorkerSource::Ip(_) | WorkerSource::Interface(_))
        {
            return Err(Error::InvalidInput(format!(
                "bits_from = \"octets\" takes an IP address's octets, so it needs the ip source, not the {}",
                self.describe()
            )));
        }
        let (high, rest_bits) = split.check(layout)?;
        let octets = match split.bits_from {
            BitsFrom::Low => None,
            BitsFrom::Octets => match self.address(hostname)? {
                IpAddr::V4(a) => Some((a, a.octets())),
                IpAddr::V6(a) => {
                    return Err(Error::InvalidInput(format!(
                        "bits_from = \"octets\" needs an IPv4 address, and {a} is IPv6; give worker.ip or use bits_from = \"low\""
                    )));
                }
            },
        };
        let datacenter = match (split.datacenter, octets) {
            (Some(dc), _) => dc,
            (None, Some((addr, o))) => {
                let dc = u64::from(o[2]);
                if dc > high.max() {
                    return Err(Error::InvalidInput(format!(
                        "the third octet of {addr} ({dc}) does not fit the layout's {} field ({} bits, 0..={}); set worker.datacenter, use bits_from = \"low\", or a layout with a wider {} field",
                        high.name(),
                        high.bits(),
                        high.max(),
                        high.name()
                    )));
                }
                dc
            }
            (None, None) => return self.resolve(space, hostname),
        };
        let rest_space = 1u64 << rest_bits;
        let low = match octets {
            Some((addr, o)) => {
                let w = u64::from(o[3]);
                if w >= rest_space {
                    return Err(Error::InvalidInput(format!(
                        "the fourth octet of {addr} ({w}) does not fit the layout's node bits below the {} field ({rest_bits} bits, 0..{rest_space}); use bits_from = \"low\" or a layout with more node bits",
                        high.name()
                    )));
                }
                w
            }
            None => self.resolve(rest_space, hostname)?.unwrap_or(0),
        };
        let id = datacenter << rest_bits | low;
        tracing::info!(
            worker_id = id,
            field = high.name(),
            datacenter,
            rest = low,
            "derived worker ID split: the highest node field from {}, the rest from {}",
            if split.datacenter.is_some() {
                "worker.datacenter"
            } else {
                "the address's third octet"
            },
            if octets.is_some() {
                "the fourth octet"
            } else {
                "the derived number's low bits"
            },
        );
        Ok(Some(id))
    }

    /// The address the [`Ip`](Self::Ip) and [`Interface`](Self::Interface) sources take.
    fn address(&self, hostname: &str) -> Result<IpAddr> {
        match self {
            WorkerSource::Ip(Some(a)) => Ok(*a),
            WorkerSource::Interface(name) => interface_address(name),
            _ => match first_interface_address() {
                Some(a) => Ok(a),
                None => host_address(hostname),
            },
        }
    }

    /// True for the sources derived from the host (name, address, ordinal).
    pub fn is_derived(&self) -> bool {
        matches!(
            self,
            WorkerSource::Hostname
                | WorkerSource::Ip(_)
                | WorkerSource::Interface(_)
                | WorkerSource::StatefulSetOrdinal
        )
    }

    /// A short description for logs and errors.
    pub fn describe(&self) -> String {
        match self {
            WorkerSource::Lowest => "lowest free ID from the coordinator".into(),
            WorkerSource::Static(id) => format!("static ID {id}"),
            WorkerSource::Hostname => "derived from the host name".into(),
            WorkerSource::Ip(Some(a)) => format!("derived from IP {a}"),
            WorkerSource::Ip(None) => "derived from the host's IP".into(),
            WorkerSource::Interface(name) => format!("derived from interface {name}'s IP"),
            WorkerSource::StatefulSetOrdinal => "StatefulSet ordinal of the host name".into(),
        }
    }
}

/// How a derived worker ID fills a layout with two or more node fields (Twitter's
/// `datacenter` and `worker`). The default fills the whole node space from the derived
/// number (the low bits of an address, a hash, an ordinal).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeSplit {
    /// The highest node field's value (the datacenter), from configuration; the derived
    /// number then fills only the node bits below it.
    pub datacenter: Option<u64>,
    /// Where the bits come from.
    pub bits_from: BitsFrom,
}

/// Which bits of a derived number become the worker ID.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum BitsFrom {
    /// The low bits (Sonyflake's choice for addresses), below the datacenter if one is set.
    #[default]
    Low,
    /// An IPv4 address's octets: the highest node field from the third (unless a datacenter
    /// is set), the node bits below it from the fourth. An octet that does not fit its field
    /// is refused rather than cut, since cutting would make `10.0.1.40` and `10.0.1.8`
    /// collide on a 5-bit field.
    Octets,
}

impl NodeSplit {
    /// A split with this datacenter (the highest node field) and source of bits.
    pub fn new(datacenter: Option<u64>, bits_from: BitsFrom) -> Self {
        Self {
            datacenter,
            bits_from,
        }
    }

    /// Checks the split against `layout`: it needs two node fields or more, and a datacenter
    /// must fit the highest. Returns that field and the node bits below it.
    pub fn check<'l>(&self, layout: &'l Layout) -> Result<(&'l Field, u32)> {
        let nodes: Vec<&Field> = layout
            .fields()
            .iter()
            .filter(|f| f.role() == Role::Node)
            .collect();
        let [high, rest @ ..] = nodes.as_slice() else {
            return Err(Error::InvalidInput(
                "a datacenter or bits_from = \"octets\" needs a layout with two node fields (time:41,datacenter:5,worker:5,seq:12); this layout has none".into(),
            ));
        };
        if rest.is_empty() {
            return Err(Error::InvalidInput(format!(
                "a datacenter or bits_from = \"octets\" needs a layout with two node fields (time:41,datacenter:5,worker:5,seq:12); this layout has one, {}",
                high.name()
            )));
        }
        if let Some(dc) = self.datacenter
            && dc > high.max()
        {
            return Err(Error::InvalidInput(format!(
                "datacenter {dc} does not fit the layout's {} field ({} bits, 0..={})",
                high.name(),
                high.bits(),
                high.max()
            )));
        }
        Ok((high, rest.iter().map(|f| u32::from(f.bits())).sum()))
    }
}

/// This host's name, or `localhost` if it has none that is valid text.
pub fn hostname() -> String {
    gethostname::gethostname()
        .into_string()
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// The first IPv4 address of `interfaces` that `keep` accepts, else the first address.
fn first_ipv4(
    interfaces: &[if_addrs::Interface],
    keep: impl Fn(&if_addrs::Interface) -> bool,
) -> Option<IpAddr> {
    let addrs: Vec<IpAddr> = interfaces
        .iter()
        .filter(|i| keep(i))
        .map(|i| i.ip())
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
}

/// This host's first non-loopback address, IPv4 first, from its network interfaces.
fn first_interface_address() -> Option<IpAddr> {
    first_ipv4(&if_addrs::get_if_addrs().ok()?, |i| !i.is_loopback())
}

/// The first IPv4 address (else IPv6) of interface `name`.
fn interface_address(name: &str) -> Result<IpAddr> {
    let interfaces = if_addrs::get_if_addrs().map_err(|e| {
        Error::InvalidInput(format!(
            "cannot list the network interfaces to derive a worker ID from {name}'s IP: {e}"
        ))
    })?;
    first_ipv4(&interfaces, |i| i.name == name).ok_or_else(|| {
            let mut names: Vec<&str> = interfaces.iter().map(|i| i.name.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            Error::InvalidInput(format!(
                "cannot derive a worker ID from interface {name:?}: it has no address on this host; interfaces with one: {}",
                names.join(", ")
            ))
        })
}

/// The address `hostname` resolves to, preferring a non-loopback IPv4 one.
fn host_address(hostname: &str) -> Result<IpAddr> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<IpAddr> = (hostname, 0)
        .to_socket_addrs()
        .map_err(|e| {
            Error::InvalidInput(format!(
                "cannot derive a worker ID from the IP: host name {hostname:?} does not resolve ({e}); give the address explicitly or use another worker source"
            ))
        })?
        .map(|a| a.ip())
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4() && !a.is_loopback())
        .or_else(|| addrs.iter().find(|a| !a.is_loopback()))
        .or_else(|| addrs.first())
        .copied()
        .ok_or_else(|| {
            Error::InvalidInput(format!(
                "cannot derive a worker ID from the IP: host name {hostname:?} resolves to no address"
            ))
        })
}

/// FNV-1a, 64 bits: stable across versions and platforms, unlike std's hasher.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_give_their_low_bits() {
        let ip = WorkerSource::Ip(Some("10.1.2.3".parse().unwrap()));
        assert_eq!(ip.resolve(1024, "h").unwrap(), Some(0x203));
        // The loopback interface holds 127.0.0.1 on every Linux host: 0x7f000001.
        let lo = WorkerSource::Interface("lo".into());
        assert_eq!(lo.resolve(1024, "h").unwrap(), Some(1));
        let e = WorkerSource::Interface("nope0".into())
            .resolve(1024, "h")
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"nope0\"") && e.contains("lo"), "{e}");
        // With no address given, the first non-loopback interface's, not the host name's.
        if let Some(addr) = first_interface_address() {
            assert!(!addr.is_loopback());
        }
    }

    fn twitter() -> Layout {
        Layout::preset("twitter").unwrap()
    }

    fn split(datacenter: Option<u64>, bits_from: BitsFrom) -> NodeSplit {
        NodeSplit::new(datacenter, bits_from)
    }

    #[test]
    fn octets_fill_datacenter_and_worker() {
        let ip = |a: &str| WorkerSource::Ip(Some(a.parse().unwrap()));
        let octets = split(None, BitsFrom::Octets);
        let t = twitter();
        assert_eq!(
            ip("10.0.3.7").resolve_in(&t, &octets, "h").unwrap(),
            Some(3 << 5 | 7)
        );
        // A configured datacenter replaces the third octet.
        let dc = split(Some(30), BitsFrom::Octets);
        assert_eq!(
            ip("10.0.200.7").resolve_in(&t, &dc, "h").unwrap(),
            Some(30 << 5 | 7)
        );
        // Octets that do not fit their field are refused, naming the octet and the field.
        let e = ip("10.0.3.40")
            .resolve_in(&t, &octets, "h")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("fourth octet of 10.0.3.40 (40)") && e.contains("0..32"),
            "{e}"
        );
        let e = ip("10.0.32.1")
            .resolve_in(&t, &octets, "h")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("third octet") && e.contains("datacenter field"),
            "{e}"
        );
        let e = WorkerSource::Ip(Some("fe80::1".parse().unwrap()))
            .resolve_in(&t, &octets, "h")
            .unwrap_err()
            .to_string();
        assert!(e.contains("IPv6"), "{e}");
    }

    #[test]
    fn a_datacenter_keeps_the_derived_number_below_it() {
        let t = twitter();
        let dc = split(Some(2), BitsFrom::Low);
        // Low bits of the address below the datacenter: 0x0203 % 32 = 3.
        let ip = WorkerSource::Ip(Some("10.1.2.3".parse().unwrap()));
        assert_eq!(ip.resolve_in(&t, &dc, "h").unwrap(), Some(2 << 5 | 3));
        let ord = WorkerSource::StatefulSetOrdinal;
        assert_eq!(
            ord.resolve_in(&t, &dc, "web-12").unwrap(),
            Some(2 << 5 | 12)
        );
        let e = ord.resolve_in(&t, &dc, "web-32").unwrap_err().to_string();
        assert!(e.contains("0..32"), "{e}");
        let h = WorkerSource::Hostname
            .resolve_in(&t, &dc, "a")
            .unwrap()
            .unwrap();
        assert_eq!(h >> 5, 2);
        // The default split is the whole node space.
        assert_eq!(
            ip.resolve_in(&t, &NodeSplit::default(), "h").unwrap(),
            Some(0x203)
        );
    }

    #[test]
    fn splits_are_refused_where_they_cannot_apply() {
        let t = twitter();
        let ip = WorkerSource::Ip(Some("10.1.2.3".parse().unwrap()));
        let e = ip
            .resolve_in(&t, &split(Some(32), BitsFrom::Low), "h")
            .unwrap_err()
            .to_string();
        assert!(e.contains("datacenter 32") && e.contains("0..=31"), "{e}");
        let one = Layout::preset("tsid").unwrap();
        let e = ip
            .resolve_in(&one, &split(Some(1), BitsFrom::Low), "h")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("two node fields") && e.contains("has one"),
            "{e}"
        );
        let e = WorkerSource::Static(3)
            .resolve_in(&t, &split(Some(1), BitsFrom::Low), "h")
            .unwrap_err()
            .to_string();
        assert!(e.contains("static ID 3"), "{e}");
        let e = WorkerSource::Hostname
            .resolve_in(&t, &split(None, BitsFrom::Octets), "h")
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs the ip source"), "{e}");
    }

    #[test]
    fn statefulset_ordinal_is_the_suffix() {
        let s = WorkerSource::StatefulSetOrdinal;
        assert_eq!(s.resolve(1024, "snowdrift-17").unwrap(), Some(17));
        assert_eq!(s.resolve(1024, "a-b-0").unwrap(), Some(0));
        assert!(s.resolve(1024, "snowdrift").is_err());
        assert!(s.resolve(1024, "snowdrift-x").is_err());
        let err = s.resolve(16, "web-16").unwrap_err().to_string();
        assert!(err.contains("0..16"), "{err}");
    }

    #[test]
    fn static_ids_must_fit_the_space() {
        assert_eq!(WorkerSource::Static(31).resolve(32, "h").unwrap(), Some(31));
        assert!(WorkerSource::Static(32).resolve(32, "h").is_err());
        assert_eq!(WorkerSource::Lowest.resolve(32, "h").unwrap(), None);
    }

    #[test]
    fn derived_ids_are_stable_and_in_range() {
        let a = WorkerSource::Hostname
            .resolve(1024, "node-a.example")
            .unwrap();
        assert_eq!(
            a,
            WorkerSource::Hostname
                .resolve(1024, "node-a.example")
                .unwrap()
        );
        assert!(a.unwrap() < 1024);
        let ip = WorkerSource::Ip(Some("10.1.2.3".parse().unwrap()));
        assert_eq!(ip.resolve(256, "h").unwrap(), Some(3));
        assert_eq!(ip.resolve(1 << 16, "h").unwrap(), Some((2 << 8) | 3));
    }
}
