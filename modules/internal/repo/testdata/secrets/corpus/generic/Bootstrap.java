public class Bootstrap {
    static {
        System.setProperty("generic.api.key", "6da8@@9121079f83b2eb6acccf8219ea982c3d79bccc3e9c6a85856480661f8fde");
    }
}
