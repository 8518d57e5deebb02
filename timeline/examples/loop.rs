use loupe_timeline as tl;

fn main() -> Result<(), tl::DefineError> {
    // Once: name, level 0-9, rate 0-9, up to four argument names.
    let start = tl::define("loop", 0, 9, &[])?;
    let rx = tl::define("rx_batch", 1, 8, &["packets", "bytes"])?; // 1 breath in 5
    let parse = tl::define("parse", 2, 6, &["packet"])?; // 1 breath in 125
    let end = tl::define("loop_end", 0, 9, &["packets"])?;
    for _ in 0..1_000_000 {
        tl::breath(); // roll this thread's threshold for the iteration
        start.log(0, 0, 0, 0);
        let (packets, bytes) = (32, 2048);
        rx.log(packets, bytes, 0, 0);
        for p in 0..packets {
            parse.log(p, 0, 0, 0);
        }
        end.log(packets, 0, 0, 0); // its lag is the iteration's latency
    }
    println!("events in {}", tl::file_path().unwrap().display());
    Ok(())
}
