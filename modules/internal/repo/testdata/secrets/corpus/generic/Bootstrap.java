public class Bootstrap {
    static {
        System.setProperty("generic.api.key", "Zf3D@@0LXCM3EIMbgJpUNnkRtOfOueHznB");
        System.setProperty("generic.api.key", "e7Ns@@DhXC01XiE8Cv6SnMg7vEOnIG8x");
    }
}
