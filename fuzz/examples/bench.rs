//! Times a target's check over a corpus folder: `bench_sse <target> <dir>`.
fn main() {
    let target = std::env::args().nth(1).unwrap();
    let dir = std::env::args().nth(2).unwrap();
    let check: fn(&[u8]) = match target.as_str() {
        "http_sse" => smthrs_mcp_fuzz::http_sse::check,
        "redaction" => smthrs_mcp_fuzz::redaction::check,
        _ => panic!("unknown target"),
    };
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).collect();
    files.sort();
    let mut slow = Vec::new();
    let started = std::time::Instant::now();
    for f in &files {
        let data = std::fs::read(f).unwrap();
        let t = std::time::Instant::now();
        check(&data);
        slow.push((t.elapsed(), f.clone(), data.len()));
    }
    slow.sort();
    println!("{} runs in {:?}", files.len(), started.elapsed());
    for (t, f, len) in slow.iter().rev().take(3) {
        println!("{t:?} {len} {}", f.display());
    }
}
