//! Hostile: `run` opens a TCP connection, so the component imports wasi:sockets and must be
//! refused at upload.

use loupe_udf::{Analysis, Context, Description, Output, ResultKind};

struct Sockets;

impl Analysis for Sockets {
    fn describe() -> Description {
        Description::new("hostile-sockets", ResultKind::Text).summary("Opens a socket (must be refused)")
    }

    fn run(_ctx: &Context) -> Result<Output, String> {
        match std::net::TcpStream::connect("127.0.0.1:1") {
            Ok(s) => Ok(Output::text(format!("connected from {:?}", s.local_addr()))),
            Err(e) => Err(format!("connect 127.0.0.1:1: {e}")),
        }
    }
}

loupe_udf::export_analysis!(Sockets);
