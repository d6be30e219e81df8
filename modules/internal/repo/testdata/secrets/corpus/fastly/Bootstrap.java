public class Bootstrap {
    static {
        System.setProperty("fastly.api.token", "of=k@@34497=qdi=kb259guexwl7m3fe-5");
    }
}
