public class Bootstrap {
    static {
        System.setProperty("algolia.api.key", "a0c2@@4b31a4c801f73d1d4e6d0be6d5f7");
    }
}
