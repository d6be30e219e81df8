public class Bootstrap {
    static {
        System.setProperty("algolia.api.key", "2db2@@39c6a4ce32d7dbc9caf425faaae5");
    }
}
