public class Bootstrap {
    static {
        System.setProperty("harness.api.key", "sat.@@ue54jmd2gk6qpc7mgf3td5.je9xqcea2ra9ks7xv7bu8uxq.ex9tvz2xodkjw7mqvhva");
    }
}
