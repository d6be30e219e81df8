public class Bootstrap {
    static {
        System.setProperty("looker.client.id", "qdxf@@v1t63wpkryn8au5s");
    }
}
