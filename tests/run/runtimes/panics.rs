// Rust as it is: a panic caught by catch_unwind (the unwinder walks the
// copies' frames), threads, and a hash map; prints what it computed.
use std::collections::HashMap;

fn main() {
    let mut m = HashMap::new();
    for i in 0..100000u64 {
        *m.entry(i % 1000).or_insert(0u64) += i;
    }
    std::panic::set_hook(Box::new(|_| {}));   // the panic's message is not output
    let caught = std::panic::catch_unwind(|| {
        let v: Vec<u32> = Vec::new();
        v[3]
    });
    let workers: Vec<_> = (0..4)
        .map(|t| std::thread::spawn(move || (0..1000000u64).map(|x| x * t).sum::<u64>()))
        .collect();
    let sum: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    println!("{} {} {}", m.len(), caught.is_err(), sum);
}
