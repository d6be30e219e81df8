public class Bootstrap {
    static {
        System.setProperty("azure.ad.client.secret", "YYz7@@Q~Sudoqwap1PnzEBA3zqBK~i5uesDIv.C");
    }
}
