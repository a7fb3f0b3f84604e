//! Server-sent events, parsed as bytes arrive (`event`, `data`, `id`
//! fields; comments and retry hints ignored).

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Event {
    pub event: String,
    pub data: String,
}

#[derive(Default)]
pub struct Parser {
    buf: Vec<u8>,
}

impl Parser {
    /// Feeds bytes; returns the events they completed.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Event> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        // An event ends at a blank line; split on bytes, so a character cut
        // between two chunks is whole again before it is decoded.
        while let Some((end, sep)) = blank_line(&self.buf) {
            let block = String::from_utf8_lossy(&self.buf[..end]).replace("\r\n", "\n").replace('\r', "\n");
            self.buf.drain(..end + sep);
            let mut ev = Event::default();
            let mut data: Vec<&str> = Vec::new();
            for line in block.lines() {
                let (field, value) = line.split_once(':').map_or((line, ""), |(f, v)| (f, v.strip_prefix(' ').unwrap_or(v)));
                match field {
                    "event" => ev.event = value.to_owned(),
                    "data" => data.push(value),
                    _ => {}
                }
            }
            if data.is_empty() && ev.event.is_empty() {
                continue;
            }
            ev.data = data.join("\n");
            if ev.event.is_empty() {
                ev.event = "message".into();
            }
            out.push(ev);
        }
        out
    }
}

/// Where the first blank line starts, and how long its separator is.
fn blank_line(buf: &[u8]) -> Option<(usize, usize)> {
    (0..buf.len()).find_map(|i| {
        let rest = &buf[i..];
        if rest.starts_with(b"\r\n\r\n") {
            Some((i, 4))
        } else if rest.starts_with(b"\n\n") || rest.starts_with(b"\r\r") {
            Some((i, 2))
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_and_line_endings() {
        let mut p = Parser::default();
        assert!(p.push(b"event: endpoint\r\ndata: /messages/?session_id=1").is_empty());
        let evs = p.push(b"\r\n\r\n: ping\n\ndata: {\"a\":\ndata: 1}\n\n");
        assert_eq!(evs, vec![
            Event { event: "endpoint".into(), data: "/messages/?session_id=1".into() },
            Event { event: "message".into(), data: "{\"a\":\n1}".into() },
        ]);
    }
}
