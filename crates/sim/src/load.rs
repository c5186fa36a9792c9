//! Fabrics from ibsim netfiles (parsed by `ibnetfile`), in O(N).

use std::path::Path;

use ibnetfile::Netfile;

use crate::model::{Builder, Fabric, NodeSpec, Origin, MAX_UNICAST_LID};
use crate::{Error, Result};

impl Fabric {
    /// Builds the fabric a parsed netfile describes; `file` names it in errors. Checks what
    /// [`Builder`] checks, plus LIDs: at most [`MAX_UNICAST_LID`].
    pub fn from_netfile(net: &Netfile, file: Option<&str>) -> Result<Fabric> {
        let origin = |line: usize| Origin {
            file: file.map(str::to_string),
            line,
        };
        let mut b = Builder::new();
        let mut idx = Vec::with_capacity(net.nodes.len());
        for n in &net.nodes {
            let at = origin(n.line);
            let i = b.node(NodeSpec {
                node_type: n.node_type,
                id: n.id.clone(),
                description: n.description.clone(),
                num_ports: n.num_ports,
                guid: n.guid,
                system_image_guid: n.system_image_guid,
                vendor_id: n.vendor_id,
                device_id: n.device_id,
                enhanced_port0: n.enhanced_port0.unwrap_or(false),
                origin: at.clone(),
            })?;
            let lid_ok = |lid: u16| {
                if lid > MAX_UNICAST_LID {
                    Err(Error::Invalid {
                        origin: at.clone(),
                        what: format!(
                            "LID {lid:#x} of {:?} is not a unicast LID (at most {MAX_UNICAST_LID:#x})",
                            n.id
                        ),
                    })
                } else {
                    Ok(lid)
                }
            };
            if let Some(p0) = b.port_mut(i, 0) {
                p0.lid = lid_ok(n.lid)?;
                p0.lmc = n.lmc;
            }
            for p in &n.ports {
                let lid = lid_ok(p.lid)?;
                if let Some(port) = b.port_mut(i, p.number) {
                    port.width_enabled = p.width;
                    port.speed_enabled = p.speed;
                    port.speed_ext_enabled = p.speed_ext;
                    port.mlnx_speed_enabled = p.mlnx_speed;
                    if lid != 0 {
                        port.lid = lid;
                        port.lmc = p.lmc;
                    }
                }
            }
            idx.push(i);
        }
        for (n, &i) in net.nodes.iter().zip(&idx) {
            for p in &n.ports {
                let far = b
                    .fabric()
                    .find_id(&p.remote.node)
                    .ok_or_else(|| Error::Invalid {
                        origin: origin(n.line),
                        what: format!(
                            "{:?} port {} is linked to {:?}, which the file does not define",
                            n.id, p.number, p.remote.node
                        ),
                    })?;
                b.link((i, p.number), (far, p.remote.port), &origin(n.line))?;
            }
        }
        Ok(b.build())
    }

    /// Reads and builds a netfile.
    pub fn load(path: impl AsRef<Path>) -> Result<Fabric> {
        let path = path.as_ref();
        let net = Netfile::load(path)?;
        Fabric::from_netfile(&net, Some(&path.display().to_string()))
    }
}
