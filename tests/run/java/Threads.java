// A Java program with threads and exceptions: worker threads share a
// counter and a map, exceptions are thrown and caught across frames (some
// by the JIT-compiled code), and a stack trace is read.
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicLong;

public class Threads {
    static int deep(int n) {
        if (n == 0) throw new IllegalStateException("bottom");
        return deep(n - 1) + 1;
    }

    static long work(int id) {
        long s = 0;
        for (int i = 0; i < 200_000; i++) {
            s += (i * 31L + id) % 1009;
            if (i % 20_000 == 0) {
                try { deep(20 + id); } catch (IllegalStateException e) { s++; }
            }
        }
        return s;
    }

    public static void main(String[] args) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        AtomicLong total = new AtomicLong();
        ConcurrentHashMap<Integer, Long> byId = new ConcurrentHashMap<>();
        List<Future<?>> fs = new ArrayList<>();
        for (int id = 0; id < 8; id++) {
            final int k = id;
            fs.add(pool.submit(() -> { long v = work(k); byId.put(k, v); total.addAndGet(v); }));
        }
        for (Future<?> f : fs) f.get();
        pool.shutdown();
        System.out.println("total " + total.get() + " workers " + new TreeMap<>(byId).size());
        try {
            Object o = null;
            o.hashCode();
        } catch (NullPointerException e) {
            System.out.println("npe caught");
        }
        try { deep(5); } catch (IllegalStateException e) {
            System.out.println("frames named deep: " + Arrays.stream(e.getStackTrace())
                .filter(f -> f.getMethodName().equals("deep")).count());
        }
        int[] a = new int[3];
        try { a[5] = 1; } catch (ArrayIndexOutOfBoundsException e) { System.out.println("bounds caught"); }
        System.exit(7);
    }
}
