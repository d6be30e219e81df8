public class Bootstrap {
    static {
        System.setProperty("algolia.api.key", "8654@@8c7f8b54f8c9998b61bf8bb68aea");
    }
}
