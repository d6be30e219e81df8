public class Bootstrap {
    static {
        System.setProperty("algolia.api.key", "01b8@@240e0fd3c64b517b35526e7042ab");
    }
}
