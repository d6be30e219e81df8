public class Bootstrap {
    static {
        System.setProperty("looker.client.id", "s6vr@@q4wslk59hz4a3izo");
    }
}
