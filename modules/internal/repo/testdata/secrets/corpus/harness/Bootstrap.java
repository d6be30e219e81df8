public class Bootstrap {
    static {
        System.setProperty("harness.api.key", "sat.@@ry51am5kdt471cn8cpadoy.m3azj1x6afam7jkaletu7izf.q24n5cskhvh9brcdnxib");
    }
}
