public class Bootstrap {
    static {
        System.setProperty("kucoin.secret.key", "ea17@@7d50-9f25-8078-ffcc-a2a19cc3d390");
    }
}
