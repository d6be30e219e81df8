public class Bootstrap {
    static {
        System.setProperty("etsy.access.token", "q9my@@ltaeoynbgx1g6qgu32hc");
    }
}
