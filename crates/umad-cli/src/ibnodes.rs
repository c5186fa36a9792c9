//! `umad ibswitches`, `ibhosts`, `ibrouters` and `ibnodes`: one line per switch, CA or
//! router of the fabric, as infiniband-diags' scripts of those names print them, or
//! `--json` (docs/json/ibnodes-v1.schema.json).
//!
//! In rdma-core these are shell scripts: they run `ibnetdiscover -y <mkey> [-C ca] [-P port]
//! [-t ms]` (or `cat` a saved topology file given as the argument), and an awk program keeps
//! the `Switch`, `Ca` or `Rt` lines, rewritten as `Switch\t: 0x<guid> ports <n> <rest>`, and
//! every line that starts with `ib` or holds `ibpanic:`, `ibwarn:` or `iberror:`. This module
//! does the same steps: it reads the arguments as the script does (`-h` and anything it does
//! not know print its usage and exit 255; an empty argument ends the arguments), runs this
//! binary's own `ibnetdiscover` (stderr passed through, its exit status kept), strips the
//! trailing newlines as `` `...` `` does, echoes the text as dash's `echo` (backslash escapes
//! interpreted) and applies the awk rules with mawk's `match`/`substr` semantics. `ibnodes`
//! is `ibhosts` then `ibswitches` with the arguments word-split (the script's unquoted `$@`);
//! its exit status is `ibswitches`'.
//!
//! `ibnetdiscover`'s `iberror` line goes where C's does: C's `IBEXIT` prints it on stdout
//! as `$IBPATH/ibnetdiscover: iberror: ...` (the script runs it by that path, default
//! `/usr/sbin`) and the awk rules keep it; ours prints it on stderr, so it is moved into the
//! text with that prefix.
//!
//! Differences: the `ibnetdiscover` run is always this binary's (`$IBPATH` only names it in
//! that line); a topology file argument is split into words (as the script's `eval cat
//! $topofile`) but not glob-expanded; a discovery that fails says why in `umad
//! ibnetdiscover`'s words (C's says `discover failed`).

use std::ffi::OsString;
use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

/// Which lines a tool keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `ibswitches`: `Switch` lines.
    Switches,
    /// `ibhosts`: `Ca` lines.
    Hosts,
    /// `ibrouters`: `Rt` lines.
    Routers,
}

impl Kind {
    fn tool(self) -> &'static str {
        match self {
            Kind::Switches => "ibswitches",
            Kind::Hosts => "ibhosts",
            Kind::Routers => "ibrouters",
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Kind::Switches => "Switch",
            Kind::Hosts => "Ca",
            Kind::Routers => "Rt",
        }
    }
}

/// `umad ibswitches`.
pub fn ibswitches_main(_prog: &'static str, args: Vec<OsString>) -> i32 {
    main_for(&[Kind::Switches], args)
}

/// `umad ibhosts`.
pub fn ibhosts_main(_prog: &'static str, args: Vec<OsString>) -> i32 {
    main_for(&[Kind::Hosts], args)
}

/// `umad ibrouters`.
pub fn ibrouters_main(_prog: &'static str, args: Vec<OsString>) -> i32 {
    main_for(&[Kind::Routers], args)
}

/// `umad ibnodes`: `ibhosts $@; ibswitches $@`.
pub fn ibnodes_main(_prog: &'static str, args: Vec<OsString>) -> i32 {
    // The script's unquoted $@: every argument split on blanks, empty words dropped.
    let words: Vec<OsString> = args
        .iter()
        .flat_map(|a| {
            a.to_string_lossy()
                .split([' ', '\t', '\n'])
                .filter(|w| !w.is_empty())
                .map(OsString::from)
                .collect::<Vec<_>>()
        })
        .collect();
    main_for(&[Kind::Hosts, Kind::Switches], words)
}

/// The script's usage line (on stdout; the script then exits 255).
pub fn usage(kind: Kind) -> String {
    format!(
        "Usage: {} [-h] [<topology-file> | -y mkey -C ca_name -P ca_port -t timeout_ms]\n",
        kind.tool()
    )
}

/// The arguments as the script reads them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScriptArgs {
    /// The topology file argument, if any.
    pub topofile: Option<String>,
    /// `-y`: the M_Key passed to ibnetdiscover ("0" by default).
    pub mkey: String,
    /// `-C`/`-P`/`-t` (and long forms), as given, passed to ibnetdiscover.
    pub ca_info: Vec<String>,
    /// `--json` (not an option of the scripts).
    pub json: bool,
}

/// Reads `args` as the script's `while [ "$1" ]; do case $1 in ...` loop: `None` where the
/// script prints its usage.
pub fn parse_script_args(args: &[String]) -> Option<ScriptArgs> {
    let mut a = ScriptArgs {
        mkey: "0".into(),
        ..ScriptArgs::default()
    };
    let mut i = 0;
    // `[ "$1" ]`: an empty argument ends the loop.
    while i < args.len() && !args[i].is_empty() {
        let arg = args[i].as_str();
        let value = || -> Option<String> {
            let v = args.get(i + 1)?;
            (!v.starts_with('-') && !v.is_empty()).then(|| v.clone())
        };
        match arg {
            "-h" | "--help" => return None,
            "--json" => a.json = true,
            "-y" | "--m_key" => {
                a.mkey = value()?;
                i += 1;
            }
            "-P" | "--Port" | "-C" | "--Ca" | "-t" | "--timeout" => {
                let v = value()?;
                a.ca_info.push(arg.to_string());
                a.ca_info.push(v);
                i += 1;
            }
            _ if arg.starts_with('-') => return None,
            _ => {
                if a.topofile.is_some() {
                    return None;
                }
                a.topofile = Some(arg.to_string());
            }
        }
        i += 1;
    }
    Some(a)
}

fn main_for(kinds: &[Kind], args: Vec<OsString>) -> i32 {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut code = 0;
    let mut docs_nodes = Vec::new();
    let mut docs_messages = Vec::new();
    let mut json = false;
    for &kind in kinds {
        let Some(sa) = parse_script_args(&args) else {
            print!("{}", usage(kind));
            let _ = std::io::stdout().flush();
            code = 255;
            continue;
        };
        json |= sa.json;
        let (text, rv) = netcmd(&sa);
        let echoed = dash_echo(text.trim_end_matches('\n'));
        let lines = filter(kind, &echoed);
        code = rv;
        if sa.json {
            for l in &lines {
                match parse_line(kind, l) {
                    Some(n) => docs_nodes.push(n),
                    None => docs_messages.push(json!(l)),
                }
            }
        } else {
            let mut out = std::io::stdout().lock();
            for l in &lines {
                let _ = writeln!(out, "{l}");
            }
            let _ = out.flush();
        }
    }
    if json {
        let doc = json!({
            "schema_version": 1,
            "nodes": docs_nodes,
            "messages": docs_messages,
        });
        println!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
    }
    code
}

/// The script's `netcmd`: `cat $topofile` or `ibnetdiscover -y $mkey $ca_info` (word-split
/// as `eval` does); returns its stdout and exit status. Its stderr is ours.
fn netcmd(a: &ScriptArgs) -> (String, i32) {
    match &a.topofile {
        Some(files) => {
            let mut text = Vec::new();
            let mut rv = 0;
            for f in files.split([' ', '\t', '\n']).filter(|w| !w.is_empty()) {
                match std::fs::read(f) {
                    Ok(b) => text.extend_from_slice(&b),
                    Err(e) => {
                        eprintln!("cat: {f}: {}", crate::debug::strerror(&e));
                        rv = 1;
                    }
                }
            }
            (String::from_utf8_lossy(&text).into_owned(), rv)
        }
        None => {
            let mut words: Vec<String> = vec!["-y".into()];
            words.extend(
                std::iter::once(a.mkey.as_str())
                    .chain(a.ca_info.iter().map(String::as_str))
                    .flat_map(|w| w.split([' ', '\t', '\n']))
                    .filter(|w| !w.is_empty())
                    .map(str::to_string),
            );
            let exe = match std::env::current_exe() {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("can't find the umad binary: {e}");
                    return (String::new(), 127);
                }
            };
            let out = Command::new(exe)
                .arg("ibnetdiscover")
                .args(&words)
                .stdin(Stdio::inherit())
                .stderr(Stdio::piped())
                .stdout(Stdio::piped())
                .output();
            match out {
                Ok(o) => {
                    let mut text = with_ibpath(&String::from_utf8_lossy(&o.stdout));
                    text.push_str(&iberror_lines(&String::from_utf8_lossy(&o.stderr)));
                    (text, o.status.code().unwrap_or(255))
                }
                Err(e) => {
                    eprintln!("can't run ibnetdiscover: {e}");
                    (String::new(), 127)
                }
            }
        }
    }
}

/// ibnetdiscover's stderr: its `iberror` lines are returned to go where C's go (C's
/// `IBEXIT` prints them on stdout, as `$IBPATH/ibnetdiscover: iberror: ...`: the script
/// runs it by that path, default `/usr/sbin`); the other lines are printed on stderr.
fn iberror_lines(stderr: &str) -> String {
    let ibpath = std::env::var("IBPATH").unwrap_or_else(|_| "/usr/sbin".into());
    let mut moved = String::new();
    for line in stderr.lines() {
        if line.contains("iberror:") {
            match line.strip_prefix("ibnetdiscover: ") {
                Some(rest) => moved.push_str(&format!("{ibpath}/ibnetdiscover: {rest}\n")),
                None => moved.push_str(&format!("{line}\n")),
            }
        } else {
            eprintln!("{line}");
        }
    }
    moved
}

/// ibnetdiscover's stdout with its own `iberror` lines (a bad common option, `-t 0`, is
/// C's `IBEXIT` on stdout) named by the script's path, as C's are.
fn with_ibpath(stdout: &str) -> String {
    let ibpath = std::env::var("IBPATH").unwrap_or_else(|_| "/usr/sbin".into());
    stdout
        .lines()
        .map(|l| match l.strip_prefix("ibnetdiscover: iberror: ") {
            Some(rest) => format!("{ibpath}/ibnetdiscover: iberror: {rest}\n"),
            None => format!("{l}\n"),
        })
        .collect()
}

/// `echo "$text"` in dash: the text with backslash escapes interpreted (`\c` ends the
/// output without the newline), then a newline.
pub fn dash_echo(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 1);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('a') => out.push('\x07'),
            Some('b') => out.push('\x08'),
            Some('c') => return out,
            Some('e') => out.push('\x1b'),
            Some('f') => out.push('\x0c'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('v') => out.push('\x0b'),
            Some('\\') => out.push('\\'),
            Some('0') => {
                let mut v: u32 = 0;
                for _ in 0..3 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from((v & 0xff) as u8));
            }
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out.push('\n');
    out
}

/// awk's `$n` with the default field separator (runs of blanks and tabs).
fn awk_field(line: &str, n: usize) -> &str {
    line.split([' ', '\t', '\n'])
        .filter(|w| !w.is_empty())
        .nth(n - 1)
        .unwrap_or("")
}

/// awk's `match(s, re)` for the regexps the scripts use: RSTART (1-based, 0 = none) and
/// RLENGTH (-1 = none). `re` is a literal, or `"#[ \t]*"`.
fn awk_match(s: &str, re: &str) -> (i64, i64) {
    let b = s.as_bytes();
    if re == "#[ \t]*" {
        return match b.iter().position(|&c| c == b'#') {
            Some(i) => {
                let blanks = b[i + 1..]
                    .iter()
                    .take_while(|&&c| c == b' ' || c == b'\t')
                    .count();
                (i as i64 + 1, 1 + blanks as i64)
            }
            None => (0, -1),
        };
    }
    match s.find(re) {
        Some(i) => (i as i64 + 1, re.len() as i64),
        None => (0, -1),
    }
}

/// mawk's `substr(s, m[, n])` (bytes): the characters at positions m..m+n-1 that exist.
fn awk_substr(s: &str, m: i64, n: Option<i64>) -> String {
    let b = s.as_bytes();
    let len = b.len() as i64;
    let start = m.max(1);
    let end = match n {
        Some(n) => (m + n).min(len + 1),
        None => len + 1,
    };
    if end <= start {
        return String::new();
    }
    String::from_utf8_lossy(&b[(start - 1) as usize..(end - 1) as usize]).into_owned()
}

/// The script's awk program for `kind` over `text`: the lines it prints.
pub fn filter(kind: Kind, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    // awk's records: the text is newline-terminated (echo), so no empty last record.
    let body = text.strip_suffix('\n').unwrap_or(text);
    for line in body.split('\n') {
        if line.starts_with(kind.prefix()) {
            out.push(rewrite(kind, line));
        }
        if line.starts_with("ib") {
            out.push(line.to_string());
            continue;
        }
        for pat in ["ibpanic:", "ibwarn:", "iberror:"] {
            if line.contains(pat) {
                out.push(line.to_string());
            }
        }
    }
    out
}

/// The awk rule's rewrite of a `Switch`, `Ca` or `Rt` line.
fn rewrite(kind: Kind, line: &str) -> String {
    let head = format!(
        "{}\t: 0x{} ports {} ",
        awk_field(line, 1),
        awk_substr(awk_field(line, 3), 4, Some(16)),
        awk_field(line, 2)
    );
    let (start, len) = awk_match(line, "#[ \t]*");
    let after = awk_substr(line, start + len, None);
    if kind != Kind::Switches {
        return head + &after;
    }
    let (pi, _) = awk_match(&after, "port 0");
    let pinfo = awk_substr(&after, pi, None);
    let mut desc = awk_substr(&after, 1, Some(pi - 2));
    let mut ty = "base port 0";
    let (mut ti, _) = awk_match(&desc, ty);
    if ti == 0 {
        ty = "enhanced port 0";
        ti = awk_match(&desc, ty).0;
        if ti != 0 {
            desc = awk_substr(&desc, 1, Some(ti - 2));
        }
    } else {
        desc = awk_substr(&desc, 1, Some(ti - 2));
    }
    if ti == 0 {
        format!("{head}{desc} {pinfo}")
    } else {
        format!("{head}{desc} {ty} {pinfo}")
    }
}

/// A printed node line as JSON (`None` for the other lines the rules keep: messages).
fn parse_line(kind: Kind, line: &str) -> Option<Value> {
    let rest = line.strip_prefix(kind.prefix())?.strip_prefix("\t: ")?;
    let mut words = rest.splitn(4, ' ');
    let guid = words.next()?.to_string();
    if words.next()? != "ports" {
        return None;
    }
    let ports = words.next()?.parse::<u32>().ok();
    let tail = words.next().unwrap_or("");
    // The description: quoted (ibnetdiscover always quotes it), the rest port 0 details.
    let (description, details) = match tail
        .strip_prefix('"')
        .and_then(|t| t.rfind('"').map(|i| (t, i)))
    {
        Some((t, i)) => (t[..i].to_string(), t[i + 1..].trim_start()),
        None => (tail.to_string(), ""),
    };
    let mut node = json!({
        "type": kind.prefix(),
        "guid": guid,
        "ports": ports,
        "description": description,
        "text": line,
    });
    if kind == Kind::Switches {
        let words: Vec<&str> = details.split(' ').collect();
        let after = |key: &str| {
            words
                .iter()
                .position(|w| *w == key)
                .and_then(|i| words.get(i + 1))
                .and_then(|v| v.parse::<u32>().ok())
        };
        let port0 = if details.starts_with("enhanced port 0") {
            Some("enhanced")
        } else if details.starts_with("base port 0") {
            Some("base")
        } else {
            None
        };
        node["port0"] = json!(port0);
        node["lid"] = json!(after("lid"));
        node["lmc"] = json!(after("lmc"));
    }
    Some(node)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(a: &[&str]) -> Vec<String> {
        a.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn script_arguments() {
        let a =
            parse_script_args(&s(&["-C", "mlx5_0", "-P", "1", "-y", "5", "-t", "100"])).unwrap();
        assert_eq!(a.ca_info, s(&["-C", "mlx5_0", "-P", "1", "-t", "100"]));
        assert_eq!(a.mkey, "5");
        assert_eq!(a.topofile, None);
        assert_eq!(parse_script_args(&s(&["-h"])), None);
        assert_eq!(parse_script_args(&s(&["-x"])), None);
        assert_eq!(parse_script_args(&s(&["-P"])), None);
        assert_eq!(parse_script_args(&s(&["-P", "-1"])), None);
        assert_eq!(parse_script_args(&s(&["-P", ""])), None);
        assert_eq!(parse_script_args(&s(&["a", "b"])), None);
        let a = parse_script_args(&s(&["topo", "", "-x"])).unwrap();
        assert_eq!(a.topofile.as_deref(), Some("topo"));
    }

    #[test]
    fn awk_rules() {
        let sw = "Switch\t8 \"S-0000000000200001\"\t\t# \"sw2\" enhanced port 0 lid 3 lmc 0";
        assert_eq!(
            filter(Kind::Switches, &format!("{sw}\n")),
            vec!["Switch\t: 0x0000000000200001 ports 8 \"sw2\" enhanced port 0 lid 3 lmc 0"]
        );
        let ca = "Ca\t1 \"H-0000000000100007\"\t\t# \"host4 HCA-1\"";
        assert_eq!(
            filter(
                Kind::Hosts,
                &format!("{ca}\nibwarn: x\nfoo iberror: ibwarn: y\n")
            ),
            vec![
                "Ca\t: 0x0000000000100007 ports 1 \"host4 HCA-1\"",
                "ibwarn: x",
                "foo iberror: ibwarn: y",
                "foo iberror: ibwarn: y",
            ]
        );
        // No '#', no "port 0": what mawk makes of it.
        assert_eq!(filter(Kind::Hosts, "Ca 1\n"), vec!["Ca\t: 0x ports 1 Ca 1"]);
        assert_eq!(
            filter(Kind::Switches, "Switch\n"),
            vec!["Switch\t: 0x ports   Switch"]
        );
        assert!(filter(Kind::Routers, "\n").is_empty());
    }

    #[test]
    fn echo_escapes() {
        assert_eq!(dash_echo("a\\tb"), "a\tb\n");
        assert_eq!(dash_echo("a\\cb"), "a");
        assert_eq!(dash_echo("\\0101\\q\\"), "A\\q\\\n");
    }

    #[test]
    fn json_lines() {
        let v = parse_line(
            Kind::Switches,
            "Switch\t: 0x0000000000200001 ports 8 \"sw2\" enhanced port 0 lid 3 lmc 0",
        )
        .unwrap();
        assert_eq!(v["description"], "sw2");
        assert_eq!(v["lid"], 3);
        assert_eq!(v["port0"], "enhanced");
        assert!(parse_line(Kind::Hosts, "ibwarn: x").is_none());
    }
}
