public class Bootstrap {
    static {
        System.setProperty("looker.client.secret", "lnbh@@1sds6fsxvete04xd4par");
    }
}
