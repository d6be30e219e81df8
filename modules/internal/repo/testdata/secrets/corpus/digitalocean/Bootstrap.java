public class Bootstrap {
    static {
        System.setProperty("digitalocean.pat", "dop_@@v1_187432ef945f4d2ea4bd03af8eea78509c528e899e5d73a0ad8e06628e9765a6");
    }
}
