public class Bootstrap {
    static {
        System.setProperty("sourcegraph.access.token", "sgp_@@local_bcD1DA18de0d6476Be0f3BD7Ef9Da4f09b479aE5");
    }
}
