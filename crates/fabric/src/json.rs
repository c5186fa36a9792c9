//! The JSON form of a [`Fabric`]: a document with a `"schema_version"` and the model.
//!
//! ```json
//! { "schema_version": 1,
//!   "fabric": { "nodes": [ { "node_type": "Switch", "guid": "0x0000000000200000", … } ],
//!               "from": { "node": 5, "port": 1 } } }
//! ```
//!
//! GUIDs are `"0x%016x"` strings; node types and port states are names (`"CA"`, `"Switch"`,
//! `"Router"`; `"Active"`, `"LinkUp"`, …) or, for codes without a name, numbers; a DR path is
//! its text (`"0,1,8"`); width and speed codes are the raw PortInfo numbers. Node references
//! (`remote`, `from`, …) are indices into `nodes`, which keeps libibnetdisc's order.

use serde::{Deserialize, Serialize};

use crate::model::Fabric;

/// The version of the JSON layout this crate writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

/// The JSON document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FabricJson {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The fabric.
    pub fabric: Fabric,
}

/// Why a JSON document was rejected.
#[derive(Debug)]
pub enum JsonError {
    /// Not JSON, or not this layout (serde_json's message, with line and column).
    Syntax(serde_json::Error),
    /// A `schema_version` other than [`SCHEMA_VERSION`].
    Version(u32),
    /// Well-formed, but the model is inconsistent (an index out of range, a one-sided link…).
    Invalid(String),
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonError::Syntax(e) => write!(f, "fabric JSON: {e}"),
            JsonError::Version(v) => write!(
                f,
                "fabric JSON: schema_version {v} is not supported (this reader knows {SCHEMA_VERSION})"
            ),
            JsonError::Invalid(e) => write!(f, "fabric JSON: {e}"),
        }
    }
}

impl std::error::Error for JsonError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JsonError::Syntax(e) => Some(e),
            _ => None,
        }
    }
}

impl Fabric {
    /// The JSON document for this fabric, pretty-printed.
    pub fn to_json(&self) -> String {
        let doc = FabricJsonRef {
            schema_version: SCHEMA_VERSION,
            fabric: self,
        };
        // Serializing the model cannot fail: every map key is a string and no
        // Serialize impl here returns an error.
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    }

    /// Reads a JSON document written by [`Fabric::to_json`].
    ///
    /// # Errors
    /// [`JsonError`]: bad JSON or layout, an unknown `schema_version`, or an inconsistent
    /// model ([`Fabric::validate`]).
    pub fn from_json(text: &str) -> Result<Fabric, JsonError> {
        #[derive(Deserialize)]
        struct Version {
            schema_version: u32,
        }
        let v: Version = serde_json::from_str(text).map_err(JsonError::Syntax)?;
        if v.schema_version != SCHEMA_VERSION {
            return Err(JsonError::Version(v.schema_version));
        }
        let doc: FabricJson = serde_json::from_str(text).map_err(JsonError::Syntax)?;
        doc.fabric.validate().map_err(JsonError::Invalid)?;
        Ok(doc.fabric)
    }
}

/// [`FabricJson`] by reference, for writing without a clone.
#[derive(Serialize)]
struct FabricJsonRef<'a> {
    schema_version: u32,
    fabric: &'a Fabric,
}
