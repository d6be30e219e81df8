public class Bootstrap {
    static {
        System.setProperty("flyio.access.token", "fo1_@@BtKlzvfztw0M2hlLgTdsfPgDFiwM2jJjQXXy6I2pjuQ");
    }
}
