public class Bootstrap {
    static {
        System.setProperty("kucoin.access.token", "0036@@b962ca097e80e4bf0faa");
    }
}
