public class Bootstrap {
    static {
        System.setProperty("maxmind.license.key", "w5fr@@uZ_8ZUsgYLu8vwgb3yKsgMna3uIF9Oa4_mmk");
    }
}
